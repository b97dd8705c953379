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
 *   slicer [-i SECONDS] [--timeout SECONDS] [-r FILE] [--together] \
 *          [--ready] SRV_A SRV_B OUT_A OUT_B -- CLIENT_A ARGS... \
 *          -- CLIENT_B ARGS...
 *
 * SRV_A and SRV_B are the PIDs of the two servers (already listening);
 * the clients are started here, with their standard output in OUT_A and
 * OUT_B. A client must exec its program (env, taskset and `ip netns exec`
 * do; timeout(1) does not: it would be stopped instead of its child).
 * Side B starts stopped. With --ready, the clients get
 * NDK_BENCH_READY_STOP=1 and must stop themselves once connected, just
 * before their clocks start (ndkperf, lf_bench and tcp_bench's streams
 * do): A is started and waited for, then B, and only then does slicing
 * begin, so that neither side's setup (libfabric's takes about 0.3 s)
 * falls in the other's timed part. When one client has exited, the other
 * side runs to its end unsliced; with --together, it is sent SIGINT, which
 * must make it report what it measured so far and exit (ndkperf,
 * lf_bench and tcp_bench's streams do), so that both sides measured the
 * same stretch of time.
 *
 * A slice boundary may fall inside a measured operation, which then takes
 * the other side's slice longer: a few samples in a thousand. Medians do
 * not see them; means and maxima do, so only medians are compared.
 *
 * A rate needs the time its side actually ran: with -r, every slice goes
 * to FILE as a line "SIDE START END" (A or B, CLOCK_MONOTONIC nanoseconds,
 * from the SIGCONT sent to the SIGSTOP sent), so a client that prints the
 * clock at the ends of its timed loop can have its wall time replaced by
 * the part of it in its own slices.
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

#define VERSION "2"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: slicer [-i SECONDS] [--timeout SECONDS] [-r FILE] [--together]\n"
		"              [--ready] SRV_A SRV_B OUT_A OUT_B -- CLIENT_A ARGS...\n"
		"              -- CLIENT_B ARGS...\n"
		"Two benchmark pairs at once, one running at a time.\n"
		"  -i, --interval SECONDS  length of a slice (0.005)\n"
		"      --timeout SECONDS   give up after this long (120)\n"
		"  -r, --runs FILE         each slice as \"SIDE START END\" (monotonic ns)\n"
		"      --together          when one client exits, SIGINT the other\n"
		"      --ready             slice once both clients stopped themselves\n"
		"                          (NDK_BENCH_READY_STOP=1)\n"
		"  -h, --help              this help\n"
		"      --version           the version\n"
		"Exit status: 0 ok, 1 a client failed or timed out, 2 usage.\n");
}

/* The slice log (-r): when each side's current slice began (0: stopped). */
static FILE *runs;
static unsigned long long since[2];

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull +
	       (unsigned long long)t.tv_nsec;
}

static double now(void)
{
	return (double)now_ns() / 1e9;
}

/* Side I starts (go) or ends (!go) a slice. */
static void mark(int i, int go)
{
	if (go && !since[i])
		since[i] = now_ns();
	if (go || !since[i])
		return;
	if (runs)
		fprintf(runs, "%c %llu %llu\n", 'A' + i, since[i], now_ns());
	since[i] = 0;
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

/* A client's end as the exit status this program keeps (128: a signal),
 * said on stderr when it is not 0, since a client killed by a signal
 * prints nothing of its own. */
static int ended(int i, int s)
{
	if (WIFEXITED(s)) {
		if (WEXITSTATUS(s))
			fprintf(stderr,
				"slicer: client %c exited with status %d\n",
				'A' + i, WEXITSTATUS(s));
		return WEXITSTATUS(s);
	}
	if (WIFSIGNALED(s))
		fprintf(stderr,
			"slicer: client %c was killed by signal %d (%s)%s\n",
			'A' + i, WTERMSIG(s), strsignal(WTERMSIG(s)),
			WCOREDUMP(s) ? ", core dumped" : "");
	return 128;
}

/* Waits until client P stops itself (1) or exits (0; its status in *st). */
static int ready(int i, pid_t p, int *st, double t_end)
{
	struct timespec d = { 0, 1000000 };
	int s;

	for (;;) {
		pid_t r = waitpid(p, &s, WNOHANG | WUNTRACED);

		if (r == p && WIFSTOPPED(s))
			return 1;
		if (r == p) {
			fprintf(stderr,
				"slicer: client %c ended before it was "
				"ready\n",
				'A' + i);
			*st = ended(i, s);
			return 0;
		}
		if (now() > t_end) {
			fprintf(stderr,
				"slicer: client %c did not stop itself "
				"(NDK_BENCH_READY_STOP) in time\n",
				'A' + i);
			kill(p, SIGKILL);
			waitpid(p, &s, 0);
			*st = 128;
			return 0;
		}
		nanosleep(&d, NULL);
	}
}

/* Stops or continues side I: its client (if still running), its server. */
static void side(int i, const pid_t *cli, const pid_t *srv, int sig)
{
	if (sig == SIGSTOP)
		mark(i, 0);
	if (cli[i] > 0)
		kill(cli[i], sig);
	kill(srv[i], sig);
	if (sig == SIGCONT)
		mark(i, 1);
}

int main(int argc, char **argv)
{
	double slice = 0.005, timeout = 120, t0;
	pid_t srv[2], cli[2];
	int st[2] = { -1, -1 }, cur = 0, together = 0, wait_ready = 0, i, a, b;
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
		if (!strcmp(argv[1], "--together") ||
		    !strcmp(argv[1], "--ready")) {
			if (!strcmp(argv[1], "--together"))
				together = 1;
			else
				wait_ready = 1;
			argc--;
			argv++;
			continue;
		}
		if (argc < 3)
			goto bad;
		if (!strcmp(argv[1], "-i") || !strcmp(argv[1], "--interval"))
			slice = atof(argv[2]);
		else if (!strcmp(argv[1], "--timeout"))
			timeout = atof(argv[2]);
		else if (!strcmp(argv[1], "-r") || !strcmp(argv[1], "--runs")) {
			runs = fopen(argv[2], "w");
			if (!runs) {
				perror(argv[2]);
				return 2;
			}
		} else
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

	t0 = now();
	/* B's server waits stopped; B's client starts stopped. */
	kill(srv[1], SIGSTOP);
	if (wait_ready) {
		/* One client at a time to its stop, each with its server. */
		setenv("NDK_BENCH_READY_STOP", "1", 1);
		cli[0] = start(&argv[a], outs[0]);
		if (ready(0, cli[0], &st[0], t0 + timeout)) {
			kill(srv[0], SIGSTOP);
			kill(srv[1], SIGCONT);
			cli[1] = start(&argv[b + 1], outs[1]);
			if (!ready(1, cli[1], &st[1], t0 + timeout))
				cli[1] = 0;
			kill(srv[1], SIGSTOP);
			side(0, cli, srv, SIGCONT);
		} else {
			cli[0] = 0;
		}
		if (st[0] >= 0 || st[1] >= 0) {
			/* Not both ready: no measurement; end the other. */
			for (i = 0; i < 2; i++) {
				if (cli[i] > 0)
					kill(cli[i], SIGKILL);
				kill(srv[i], SIGCONT);
			}
			while (wait(NULL) > 0 || errno == EINTR)
				;
			return 1;
		}
	} else {
		mark(0, 1);
		cli[0] = start(&argv[a], outs[0]);
		cli[1] = start(&argv[b + 1], outs[1]);
		kill(cli[1], SIGSTOP);
	}
	while (st[0] < 0 || st[1] < 0) {
		struct timespec d = { 0, (long)(slice * 1e9) };
		pid_t p;
		int s;

		nanosleep(&d, NULL);
		while ((p = waitpid(-1, &s, WNOHANG)) > 0) {
			for (i = 0; i < 2; i++) {
				if (p != cli[i])
					continue;
				st[i] = ended(i, s);
				cli[i] = 0;
				mark(i, 0); /* its client is done */
			}
		}
		if (st[0] >= 0 || st[1] >= 0) {
			/* One is done: the other runs alone, or ends now. */
			for (i = 0; i < 2; i++) {
				if (together && cli[i] > 0)
					kill(cli[i], SIGINT);
				if (cli[i] > 0 || since[i])
					side(i, cli, srv, SIGCONT);
				else
					kill(srv[i], SIGCONT);
			}
			together = 0; /* once */
		} else {
			side(cur, cli, srv, SIGSTOP);
			cur = !cur;
			side(cur, cli, srv, SIGCONT);
		}
		if (now() - t0 > timeout) {
			fprintf(stderr, "slicer: timed out after %.0f s\n",
				timeout);
			for (i = 0; i < 2; i++) {
				side(i, cli, srv, SIGCONT);
				if (cli[i] > 0)
					kill(cli[i], SIGKILL);
			}
			while (wait(NULL) > 0 || errno == EINTR)
				;
			return 1;
		}
	}
	if (runs && fclose(runs)) {
		perror("slicer: the slice log");
		return 1;
	}
	return st[0] || st[1] ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
