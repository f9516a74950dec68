/* Ports and deadlines for the tests that run servers: what keeps them from failing only when the
 * machine is busy (several test processes at once, a 2-core CI runner, a sanitizer build). */
#ifndef LDPB_TEST_SUPPORT_TEST_PORT_H
#define LDPB_TEST_SUPPORT_TEST_PORT_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How many times longer a wait may take in this build. AddressSanitizer and UBSan make the daemon
 * and its clients several times slower, ThreadSanitizer 5 to 15 times, and the suite runs them two
 * at a time on two cores; a deadline sized for the optimized build would then measure the
 * machine, not the code. */
#if defined(__SANITIZE_THREAD__)
#define LDPB_TEST_SLOWDOWN 10
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define LDPB_TEST_SLOWDOWN 4
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LDPB_TEST_SLOWDOWN 10
#elif __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define LDPB_TEST_SLOWDOWN 4
#endif
#endif
#ifndef LDPB_TEST_SLOWDOWN
#define LDPB_TEST_SLOWDOWN 1
#endif

static inline long ldpb_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void ldpb_test_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits `min_ms`, then until *count (what the load threads have done so far: acked reports, ...)
 * reaches `want`, for at most 30 s (more in a sanitizer build). Returns 1 when it did. A fault
 * injected "under load" after a fixed sleep hits no load at all when the machine is slow enough
 * (a sanitizer build, two busy cores): the test's "acked > 0" then fails for want of time. */
static inline int ldpb_test_wait_count(const atomic_size_t *count, size_t want, long min_ms)
{
    ldpb_test_sleep_ms(min_ms);
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         atomic_load(count) < want && ldpb_test_now_ms() < end;)
        ldpb_test_sleep_ms(10);
    return atomic_load(count) >= want;
}

/* 1 if nothing holds TCP `port` on 127.0.0.1 now. */
static inline int ldpb_test_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    /* as the listeners under test bind (SO_REUSEADDR): a port whose last connection lingers in
     * TIME_WAIT is free for them too */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* A TCP listener of this process on 127.0.0.1 at a port the kernel picks, its port in *port: a
 * fake peer that no other process can hold, since it is bound before it is named. -1 on failure. */
static inline int ldpb_test_loopback_listener(int backlog, unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A TCP port on 127.0.0.1 that nothing holds now, or -1. It is drawn at random from outside the
 * kernel's ephemeral range (net.ipv4.ip_local_port_range): a port inside that range may be taken
 * at any moment as the local end of some other process's outgoing connection or by its bind to
 * port 0, for instance between this choice and the server's bind, or while a daemon restarts on
 * the same port after kill -9 (EADDRINUSE). Outside it, only another test drawing the same number
 * in that moment could take it: about 1 in 20000 per draw. */
static inline int ldpb_test_free_port(void)
{
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2) {
            lo = 32768;
            hi = 60999;
        }
        fclose(f);
    }
    /* below the range from port 10000 (clear of the well-known and most registered services),
     * or above it when the range starts too low to leave room */
    int first = 10000, count = lo - 10000;
    if (count < 1000) {
        first = hi + 1;
        count = 65536 - first;
    }
    if (count < 1)
        return -1;
    for (int tries = 0; tries < 200; tries++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)ldpb_test_now_ms() ^ (uint32_t)tries;
        int port = first + (int)(r % (uint32_t)count);
        if (ldpb_test_port_free(port))
            return port;
    }
    return -1;
}

#endif
