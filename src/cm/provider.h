/* SPDX-License-Identifier: MIT */
/* The software provider's connection-management creates (adapter slots). */
#ifndef NDK_CM_PROVIDER_H
#define NDK_CM_PROVIDER_H

#include <ndk/ndk.h>

NTSTATUS ndk_create_connector(NDK_ADAPTER *pNdkAdapter,
			      NDK_FN_CREATE_COMPLETION CreateCompletion,
			      PVOID RequestContext,
			      NDK_CONNECTOR **ppNdkConnector);
NTSTATUS ndk_create_listener(NDK_ADAPTER *pNdkAdapter,
			     NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
			     PVOID ConnectEventContext,
			     NDK_FN_CREATE_COMPLETION CreateCompletion,
			     PVOID RequestContext,
			     NDK_LISTENER **ppNdkListener);

#endif /* NDK_CM_PROVIDER_H */
