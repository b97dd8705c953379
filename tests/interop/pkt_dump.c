/* SPDX-License-Identifier: MIT */
/*
 * pkt_dump IFNAME FILE: every frame IFNAME sends or receives, into FILE
 * as a pcap capture (Ethernet), until SIGTERM or SIGINT. The interop
 * guest has no tcpdump; rxe-smb.sh captures the RoCEv2 frames between
 * its two veth ends with this (built on the host, as siw_pd is).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static unsigned char frame[65536];
	struct sockaddr_ll sll = { 0 };
	struct sigaction sa = { 0 };
	unsigned long frames = 0;
	struct pollfd pfd;
	unsigned int ifindex;
	FILE *out;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: pkt_dump IFNAME FILE\n");
		return 2;
	}
	ifindex = if_nametoindex(argv[1]);
	if (!ifindex) {
		perror(argv[1]);
		return 1;
	}
	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("bind");
		return 1;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	{
		/* pcap: magic, 2.4, GMT, sigfigs, snaplen, Ethernet. */
		uint32_t h[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1 };

		fwrite(h, sizeof(h), 1, out);
	}
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!stop) {
		struct timeval tv;
		uint32_t rec[4];
		ssize_t n;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recv(fd, frame, sizeof(frame), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("recv");
			break;
		}
		gettimeofday(&tv, NULL);
		rec[0] = (uint32_t)tv.tv_sec;
		rec[1] = (uint32_t)tv.tv_usec;
		rec[2] = rec[3] = (uint32_t)n;
		fwrite(rec, sizeof(rec), 1, out);
		fwrite(frame, (size_t)n, 1, out);
		frames++;
	}
	fclose(out);
	fprintf(stderr, "pkt_dump: %lu frames\n", frames);
	return 0;
}
