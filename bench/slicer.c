// SPDX-License-Identifier: MIT
/*
 * slicer: runs two benchmark pairs at once and lets only one of them run
 * at a time, switching every few milliseconds (SIGSTOP / SIGCONT), so that
 * both sides see the same mix of whatever the machine does meanwhile. On a
 * VM whose vCPU changes speed every few tens of milliseconds, pairs run
 * back to back land in different mixes and their ratio swings by more than
 * the difference being measured (docs/performance.md, "Interleaved
 * slices"); sliced, the same binary against itself comes out within 1%.
 *
 *   slicer [-i SECONDS] [--timeout SECONDS] SRV_A SRV_B OUT_A OUT_B \
 *          -- CLIENT_A ARGS... -- CLIENT_B ARGS...
 *
 * SRV_A and SRV_B are the PIDs of the two servers (already listening);
 * the clients are started here, with their standard output in OUT_A and
 * OUT_B. A client must exec its program (env, taskset and `ip netns exec`
 * do; timeout(1) does not: it would be stopped instead of its child).
 * Side B starts stopped. When one client has exited, the other side runs
 * to its end unsliced.
 *
 * A slice boundary may fall inside a measured operation, which then takes
 * the other side's slice longer: a few samples in a thousand. Medians do
 * not see them; means and maxima do, so only medians are compared.
 *
 * Exit status: 0 both clients exited 0, 1 a client failed or timed out
 * (both are killed), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERSION "1"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: slicer [-i SECONDS] [--timeout SECONDS] SRV_A SRV_B OUT_A OUT_B\n"
		"              -- CLIENT_A ARGS... -- CLIENT_B ARGS...\n"
		"Two benchmark pairs at once, one running at a time.\n"
		"  -i, --interval SECONDS  length of a slice (0.005)\n"
		"      --timeout SECONDS   give up after this long (120)\n"
		"  -h, --help              this help\n"
		"      --version           the version\n"
		"Exit status: 0 ok, 1 a client failed or timed out, 2 usage.\n");
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static pid_t start(char **argv, const char *out)
{
	pid_t p = fork();
	int fd;

	if (p)
		return p;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0) {
		perror(out);
		_exit(127);
	}
	execvp(argv[0], argv);
	perror(argv[0]);
	_exit(127);
}

/* Stops or continues one side: its client (if still running), its server. */
static void side(pid_t cli, pid_t srv, int sig)
{
	if (cli > 0)
		kill(cli, sig);
	kill(srv, sig);
}

int main(int argc, char **argv)
{
	double slice = 0.005, timeout = 120, t0;
	pid_t srv[2], cli[2];
	int st[2] = { -1, -1 }, cur = 0, i, a, b;
	char *outs[2];

	while (argc > 1 && argv[1][0] == '-' && strcmp(argv[1], "--")) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[1], "--version")) {
			printf("slicer (libndk bench) " VERSION "\n");
			return 0;
		}
		if (argc < 3)
			goto bad;
		if (!strcmp(argv[1], "-i") || !strcmp(argv[1], "--interval"))
			slice = atof(argv[2]);
		else if (!strcmp(argv[1], "--timeout"))
			timeout = atof(argv[2]);
		else
			goto bad;
		argc -= 2;
		argv += 2;
	}
	if (argc < 9 || slice <= 0 || timeout <= 0)
		goto bad;
	srv[0] = (pid_t)atoi(argv[1]);
	srv[1] = (pid_t)atoi(argv[2]);
	outs[0] = argv[3];
	outs[1] = argv[4];
	if (srv[0] <= 0 || srv[1] <= 0 || strcmp(argv[5], "--"))
		goto bad;
	a = 6;
	for (b = a; b < argc && strcmp(argv[b], "--"); b++)
		;
	if (b == a || b + 1 >= argc)
		goto bad;
	argv[b] = NULL;

	/* B's server waits stopped; B's client starts stopped. */
	kill(srv[1], SIGSTOP);
	cli[0] = start(&argv[a], outs[0]);
	cli[1] = start(&argv[b + 1], outs[1]);
	kill(cli[1], SIGSTOP);
	t0 = now();
	while (st[0] < 0 || st[1] < 0) {
		struct timespec d = { 0, (long)(slice * 1e9) };
		pid_t p;
		int s;

		nanosleep(&d, NULL);
		while ((p = waitpid(-1, &s, WNOHANG)) > 0) {
			for (i = 0; i < 2; i++) {
				if (p != cli[i])
					continue;
				st[i] = WIFEXITED(s) ? WEXITSTATUS(s) : 128;
				cli[i] = 0;
			}
		}
		if (st[0] >= 0 || st[1] >= 0) {
			/* One is done: the other runs alone. */
			for (i = 0; i < 2; i++)
				side(cli[i], srv[i], SIGCONT);
		} else {
			side(cli[cur], srv[cur], SIGSTOP);
			cur = !cur;
			side(cli[cur], srv[cur], SIGCONT);
		}
		if (now() - t0 > timeout) {
			fprintf(stderr, "slicer: timed out after %.0f s\n",
				timeout);
			for (i = 0; i < 2; i++) {
				side(cli[i], srv[i], SIGCONT);
				if (cli[i] > 0)
					kill(cli[i], SIGKILL);
			}
			while (wait(NULL) > 0 || errno == EINTR)
				;
			return 1;
		}
	}
	return st[0] || st[1] ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
