/* SPDX-License-Identifier: MIT */
/* The exit status of every tool (docs/tools.md, Exit status). */
#ifndef NDK_TOOLS_TOOL_EXIT_H
#define NDK_TOOLS_TOOL_EXIT_H

#define TOOL_EXIT_OK	  0 /* success */
#define TOOL_EXIT_FAIL	  1 /* the operation failed */
#define TOOL_EXIT_USAGE	  2 /* bad options or operands */
#define TOOL_EXIT_CONNECT 3 /* refused, rejected, unanswered, unreachable */
#define TOOL_EXIT_VERIFY  4 /* the data that arrived was wrong */

#endif
