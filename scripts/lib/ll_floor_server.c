/* The floor for scripts/bench/bench-ll.sh: the least a server can do to answer blocking playlist reloads on this
 * machine.
 *
 * It holds each `GET …?_HLS_msn=N&_HLS_part=P` until that part's boundary (epoch + (N * parts + P + 1) * part
 * duration, on the wall clock), then writes one fixed answer of the given size: a head and a body whose preload hint
 * names the next part, so the clients of ll_clients.c go on as they do against cueline. A plain GET is answered at
 * once with a hint for the part in progress. No playlist is rendered, no log is read, nothing is checked: HTTP/1.1 on
 * kept connections, one thread per core, each with its own listening socket (SO_REUSEPORT), epoll and a timerfd set
 * to the next boundary. What it takes on the same cores is what the kernel and the clients take for the same answers.
 *
 *   ll_floor_server PORT EPOCH_MS PART_MS PARTS RESPONSE_BYTES THREADS [PIN]
 *
 * PIN 1: thread i runs only on the i-th CPU the process may use, as `cueline serve --pin-event-loops` places its loops.
 * RESPONSE_BYTES: the whole answer, head and body (cueline's, measured by bench-ll.sh); the body is padded to it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { BUFFER = 4096, MAX_CONNECTIONS = 65536 };

struct connection {
    int fd;
    char buffer[BUFFER];
    size_t used;
    double due; /* > 0: held until this instant (ms since the epoch) */
    long long next_msn, next_part;
};

static int port, parts, response_bytes;
static double epoch, part_ms;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
}

static void answer(struct connection *c) {
    static __thread char out[65536];
    char body[60000];
    int n = snprintf(body, sizeof body, "#EXTM3U\n#EXT-X-VERSION:9\n#EXT-X-TARGETDURATION:1\n"
                                        "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"720p/seg%lld.%lld.m4s\"\n",
                     c->next_msn, c->next_part);
    /* The body so that head + body = response_bytes (the head's Content-Length has as many digits as cueline's). */
    char head[256];
    int h = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.apple.mpegurl\r\n"
                                        "Content-Length: %5d\r\nCache-Control: max-age=1\r\n\r\n", 0);
    int want = response_bytes - h;
    if (want > (int)sizeof body - 1) want = sizeof body - 1;
    for (; n < want; n++) body[n] = n % 64 == 63 ? '\n' : '#';
    h = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.apple.mpegurl\r\n"
                                  "Content-Length: %5d\r\nCache-Control: max-age=1\r\n\r\n", n);
    memcpy(out + h, body, n);
    /* One send for the whole answer, as cueline flushes once; a full send buffer is waited out. */
    for (int sent = 0; sent < h + n;) {
        ssize_t w = send(c->fd, out + sent, h + n - sent, MSG_NOSIGNAL);
        if (w > 0) sent += w;
        else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd writable = {.fd = c->fd, .events = POLLOUT};
            if (poll(&writable, 1, 1000) <= 0) break;
        } else break; /* a client gone: its next read fails */
    }
    c->due = 0;
}

/* Parses one whole request in c->buffer: answers it now, or holds it until its part's boundary. */
static void take(struct connection *c) {
    long long msn, part;
    const char *query = strstr(c->buffer, "_HLS_msn=");
    double now = now_ms();
    if (query && sscanf(query, "_HLS_msn=%lld&_HLS_part=%lld", &msn, &part) == 2) {
        c->due = epoch + (msn * parts + part + 1) * part_ms;
    } else {
        long long k = (long long)((now - epoch) / part_ms);
        msn = k / parts;
        part = k % parts - 1; /* the hint below names part k */
        c->due = 0;
    }
    c->next_msn = part + 1 < parts ? msn : msn + 1;
    c->next_part = part + 1 < parts ? part + 1 : 0;
    c->used = 0;
    if (c->due <= now) answer(c);
}

static void arm(int timer, double at) {
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = (time_t)(at / 1000);
    spec.it_value.tv_nsec = (long)((at - spec.it_value.tv_sec * 1000.0) * 1e6);
    timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, NULL);
}

static void *serve(void *unused) {
    (void)unused;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 4096) != 0) {
        perror("listen");
        exit(1);
    }
    int poller = epoll_create1(0), timer = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
    struct connection **held = calloc(MAX_CONNECTIONS, sizeof *held);
    int holding = 0;
    double armed = 0;
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    struct connection timer_mark;
    event.data.ptr = &timer_mark;
    epoll_ctl(poller, EPOLL_CTL_ADD, timer, &event);
    struct epoll_event events[256];
    for (;;) {
        int ready = epoll_wait(poller, events, 256, -1);
        for (int e = 0; e < ready; e++) {
            struct connection *c = events[e].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct connection *fresh = calloc(1, sizeof *fresh);
                    fresh->fd = fd;
                    struct epoll_event added = {.events = EPOLLIN, .data.ptr = fresh};
                    epoll_ctl(poller, EPOLL_CTL_ADD, fd, &added);
                }
            } else if (c == &timer_mark) {
                unsigned long long expirations;
                if (read(timer, &expirations, sizeof expirations) < 0) { /* spurious */ }
                double now = now_ms(), next = 0;
                int kept = 0;
                for (int i = 0; i < holding; i++) {
                    if (held[i]->due <= now) answer(held[i]);
                    else {
                        held[kept++] = held[i];
                        if (next == 0 || held[i]->due < next) next = held[i]->due;
                    }
                }
                holding = kept;
                armed = next;
                if (next > 0) arm(timer, next);
            } else {
                ssize_t n = read(c->fd, c->buffer + c->used, BUFFER - 1 - c->used);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                if (n <= 0) {
                    for (int i = 0; i < holding; i++)
                        if (held[i] == c) held[i] = held[--holding];
                    epoll_ctl(poller, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    free(c);
                    continue;
                }
                c->used += n;
                c->buffer[c->used] = 0;
                if (!strstr(c->buffer, "\r\n\r\n")) continue;
                take(c);
                if (c->due > 0 && holding < MAX_CONNECTIONS) {
                    held[holding++] = c;
                    if (armed == 0 || c->due < armed) {
                        armed = c->due;
                        arm(timer, armed);
                    }
                }
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: ll_floor_server PORT EPOCH_MS PART_MS PARTS RESPONSE_BYTES THREADS\n");
        return 2;
    }
    port = atoi(argv[1]);
    epoch = atof(argv[2]);
    part_ms = atof(argv[3]);
    parts = atoi(argv[4]);
    response_bytes = atoi(argv[5]);
    int threads = atoi(argv[6]), pin = argc > 7 && atoi(argv[7]) == 1;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (pin && sched_getaffinity(0, sizeof allowed, &allowed) != 0) pin = 0;
    pthread_t ids[64];
    int cpu = -1;
    for (int i = 0; i < threads && i < 64; i++) {
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        if (pin) {
            do cpu++; while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed));
            if (cpu < CPU_SETSIZE) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpu, &one);
                pthread_attr_setaffinity_np(&attributes, sizeof one, &one);
            }
        }
        pthread_create(&ids[i], &attributes, serve, NULL);
        pthread_attr_destroy(&attributes);
    }
    pthread_join(ids[0], NULL);
    return 0;
}
