/* LL-HLS clients for scripts/bench/bench-ll.sh, in C so that the clients' own CPU is small next to the server's on the
 * same 2 cores (one Python asyncio client spends ~40 us per answer: 1,000 answers due at one instant queue ~40 ms of
 * client CPU against the server's). The same behaviour as ll_clients.py without the early-return trials: N clients over
 * C channels on kept HTTP/1.1 connections, each blocking on the next part (_HLS_msn/_HLS_part from the preload hint) as
 * a player does; for every answer, how long after its part's boundary it was read (boundary = epoch + (msn * parts +
 * part + 1) * part duration). One thread, epoll. Prints one JSON object like ll_clients.py's.
 *
 * Two instants per answer: when this process read its last byte (`lateness_ms`: includes the wait for this one thread
 * to get to it, behind up to 999 other answers due at the same instant), and when that byte reached the socket
 * (`arrived_ms`: the kernel's receive timestamp, SO_TIMESTAMPNS; on loopback it is taken as the server's write hands
 * the bytes to the loopback device, so it is when the answer left the server: what a player on a device of its own
 * would see, less the network). An answer whose completing read carried no timestamp is counted (`unstamped`) and
 * left out of `arrived_ms`.
 *
 *   ll_clients HOST PORT CHANNELS CLIENTS SECONDS EPOCH_MS PART_MS PARTS FIRST_CLIENT [HEADER]
 *
 * HEADER, if given, is one more header line in every request (e.g. `Connection: keep-alive, bench` sends the requests
 * through the server's HTTP codec instead of its raw path: the same-run baseline).
 *
 * Joining: the clients open their connections one after another, evenly over the first second (LL_RAMP_MS sets it;
 * 0: all at once), as a crowd of players joins, and every answer is counted from the first. Opened all at once, the
 * server's accepting 1,000 connections and answering their first requests fell on the first part boundaries
 * (up to 139 ms after them), an instant no real audience produces.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { BUFFER = 65536 };

struct client {
    int fd;
    int channel;
    char buffer[BUFFER];
    size_t used;
    long long msn, part; /* asked for; msn < 0: the first, plain request */
    double arrived;      /* kernel receive time of the last bytes read (ms since the epoch) */
    int done;
};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *extra = "";

static void send_request(struct client *c) {
    char request[512];
    int n;
    if (c->msn < 0)
        n = snprintf(request, sizeof request, "GET /channels/ll-%d/720p.m3u8 HTTP/1.1\r\nHost: bench\r\n%s\r\n", c->channel, extra);
    else
        n = snprintf(request, sizeof request, "GET /channels/ll-%d/720p.m3u8?_HLS_msn=%lld&_HLS_part=%lld HTTP/1.1\r\nHost: bench\r\n%s\r\n",
                     c->channel, c->msn, c->part, extra);
    if (n <= 0 || n >= (int)sizeof request) {
        c->done = 1;
        return;
    }
    if (write(c->fd, request, n) != n) c->done = 1;
}

/* The next part from `#EXT-X-PRELOAD-HINT:TYPE=PART,URI="...seg<n>.<p>.m4s"`. */
static int hinted(const char *body, size_t length, long long *msn, long long *part) {
    const char *hint = memmem(body, length, "PRELOAD-HINT:TYPE=PART,URI=\"", 28);
    if (!hint) return 0;
    const char *end = memchr(hint + 28, '"', body + length - (hint + 28));
    if (!end) return 0;
    const char *seg = NULL;
    for (const char *s = hint; s + 3 < end; s++)
        if (memcmp(s, "seg", 3) == 0) seg = s;
    return seg && sscanf(seg, "seg%lld.%lld.m4s", msn, part) == 2;
}

/* Opens client `c`'s connection to channel `channel` and sends its first (plain) request. */
static int connect_client(struct client *c, int channel, int poller, const struct sockaddr_in *address) {
    c->channel = channel;
    c->msn = -1;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (connect(c->fd, (const struct sockaddr *)address, sizeof *address) != 0) {
        perror("connect");
        return -1;
    }
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(poller, EPOLL_CTL_ADD, c->fd, &event);
    send_request(c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: ll_clients HOST PORT CHANNELS CLIENTS SECONDS EPOCH_MS PART_MS PARTS FIRST_CLIENT\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), channels = atoi(argv[3]), count = atoi(argv[4]);
    double seconds = atof(argv[5]), epoch = atof(argv[6]), part_ms = atof(argv[7]);
    int parts = atoi(argv[8]), first = atoi(argv[9]);
    static char header[256];
    if (argc > 10 && argv[10][0]) {
        snprintf(header, sizeof header, "%s\r\n", argv[10]);
        extra = header;
    }
    double start = now_ms(), stop = start + seconds * 1000;
    const char *ramp_env = getenv("LL_RAMP_MS");
    double ramp_ms = ramp_env ? atof(ramp_env) : 1000;
    size_t capacity = (size_t)(seconds * 1000 / part_ms + 8) * count, answers = 0;
    double *lateness = malloc(capacity * sizeof *lateness), *arrived = malloc(capacity * sizeof *arrived);
    size_t stamped = 0, unstamped = 0; /* answers whose completing read carried a kernel timestamp, or not */
    struct client *clients = calloc(count, sizeof *clients);
    int errors = 0, poller = epoll_create1(0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, host, &address.sin_addr);
    int connected = 0, open = count;
    struct epoll_event events[256];
    while (open > 0) {
        if (now_ms() > stop + 5000) { /* an answer that never completes: give up, count the rest as errors */
            errors += open;
            break;
        }
        /* The connections due by now: client i opens at start + i * ramp / count. */
        while (connected < count && now_ms() >= start + ramp_ms * connected / count) {
            if (connect_client(&clients[connected], (first + connected) % channels, poller, &address) != 0) return 1;
            connected++;
        }
        int wait_ms = 1000;
        if (connected < count) {
            double next = start + ramp_ms * connected / count - now_ms();
            wait_ms = next > 0 ? (int)next + 1 : 0;
        }
        int ready = epoll_wait(poller, events, 256, wait_ms);
        for (int e = 0; e < ready; e++) {
            struct client *c = events[e].data.ptr;
            struct iovec data = {.iov_base = c->buffer + c->used, .iov_len = BUFFER - 1 - c->used};
            union { char space[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
            struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
            ssize_t n = recvmsg(c->fd, &message, 0);
            for (struct cmsghdr *m = n > 0 ? CMSG_FIRSTHDR(&message) : NULL; m; m = CMSG_NXTHDR(&message, m))
                if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SCM_TIMESTAMPNS) {
                    struct timespec t;
                    memcpy(&t, CMSG_DATA(m), sizeof t);
                    c->arrived = t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
                }
            if (n <= 0) {
                errors++;
                c->done = 1;
            } else {
                c->used += n;
                c->buffer[c->used] = 0;
                char *end = strstr(c->buffer, "\r\n\r\n");
                char *length = end ? strcasestr(c->buffer, "content-length:") : NULL;
                if (!end || !length) continue;
                size_t body = (size_t)atol(length + 15), head = end + 4 - c->buffer;
                if (c->used < head + body) continue;
                double at = now_ms();
                int status = atoi(c->buffer + 9);
                if (status != 200) {
                    errors++;
                } else if (c->msn >= 0 && answers < capacity) {
                    double boundary = epoch + (c->msn * parts + c->part + 1) * part_ms;
                    if (c->arrived > 0) arrived[stamped++] = c->arrived - boundary;
                    else unstamped++;
                    lateness[answers++] = at - boundary;
                }
                long long msn, part;
                int found = status == 200 && hinted(c->buffer + head, body, &msn, &part);
                c->used = 0;
                c->arrived = 0;
                if (!found || at >= stop) {
                    if (!found) errors++;
                    c->done = 1;
                } else {
                    c->msn = msn;
                    c->part = part;
                    send_request(c);
                }
            }
            if (c->done) {
                epoll_ctl(poller, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                open--;
            }
        }
    }
    qsort(lateness, answers, sizeof *lateness, compare);
    qsort(arrived, stamped, sizeof *arrived, compare);
#define PCT(q) (answers ? lateness[(size_t)(answers * (q)) < answers ? (size_t)(answers * (q)) : answers - 1] : 0)
    printf("{\"answers\": %zu, \"errors\": %d, \"error_kinds\": [], \"late_p50_ms\": %.1f, \"late_p99_ms\": %.1f, "
           "\"late_max_ms\": %.1f, \"trials\": 0, \"trials_seen\": 0, \"command_to_client_p50_ms\": null, "
           "\"command_to_client_p99_ms\": null, \"command_to_client_max_ms\": null, \"delays_ms\": [], \"lateness_ms\": [",
           answers, errors, PCT(0.5), PCT(0.99), answers ? lateness[answers - 1] : 0);
    for (size_t i = 0; i < answers; i++) printf("%s%.2f", i ? ", " : "", lateness[i]);
    /* The clients' own CPU (user and system) over the run: they share the cores with the server. */
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu_ms = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000.0 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000.0;
    printf("], \"client_cpu_ms\": %.0f, \"unstamped\": %zu, \"ramp_ms\": %.0f, \"arrived_ms\": [", cpu_ms, unstamped, ramp_ms);
    for (size_t i = 0; i < stamped; i++) printf("%s%.2f", i ? ", " : "", arrived[i]);
    printf("]}\n");
    return 0;
}
