/* The in-sandbox end of a bridge, compiled: the same contract as bridge_forwarder.py.
 *
 *   wfbench-bridge [--bridge PORT SOCKET]... -- PROGRAM [ARG]...
 *
 * Binds every 127.0.0.1:PORT (close-on-exec) before the program starts, starts PROGRAM with the
 * inherited stdin/stdout/stderr and environment, then points its own fds 0-2 at /dev/null (it
 * holds nothing of the harness's pipes). Each accepted connection is relayed both ways to the
 * bridge's UNIX socket by two threads. As PID 1 it reaps every orphan and exits with the
 * program's status (128 + N for a signal). A setup failure is one line on stderr starting
 * "wfbench-bridge:" and exit status 125. Why compiled: the Python forwarder's interpreter start
 * was most of the bridge's cost per session (issue 33); scripts/install-tools builds this file
 * with the system C compiler, and wfbench falls back to the Python forwarder without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SETUP_FAILED 125
#define PIECE 65536
#define MAX_BRIDGES 16

extern char **environ;

struct bridge { int port; const char *path; int listener; };
struct pair { int from; int to; };

static int fail(const char *what) {
    fprintf(stderr, "wfbench-bridge: %s: %s\n", what, strerror(errno));
    return SETUP_FAILED;
}

static void *pump(void *arg) {
    struct pair *p = arg;
    static __thread char buffer[PIECE];
    for (;;) {
        ssize_t got = recv(p->from, buffer, sizeof buffer, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        ssize_t off = 0;
        while (off < got) {
            ssize_t sent = send(p->to, buffer + off, (size_t)(got - off), MSG_NOSIGNAL);
            if (sent < 0 && errno == EINTR) continue;
            if (sent <= 0) goto done;
            off += sent;
        }
    }
done:
    shutdown(p->to, SHUT_WR);
    return NULL;
}

struct relay_arg { int client; const char *path; };

static void *relay(void *arg) {
    struct relay_arg *r = arg;
    int upstream = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (upstream >= 0 && strlen(r->path) < sizeof address.sun_path) {
        strcpy(address.sun_path, r->path);
        if (connect(upstream, (struct sockaddr *)&address, sizeof address) == 0) {
            struct pair back = {upstream, r->client}, forth = {r->client, upstream};
            pthread_t thread;
            if (pthread_create(&thread, NULL, pump, &back) == 0) {
                pump(&forth);
                pthread_join(thread, NULL);
            }
        }
    }
    if (upstream >= 0) close(upstream);
    close(r->client);
    free(r);
    return NULL;
}

static void *serve(void *arg) {
    struct bridge *b = arg;
    for (;;) {
        int client = accept4(b->listener, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) continue;
        int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct relay_arg *r = malloc(sizeof *r);
        pthread_t thread;
        if (r == NULL) { close(client); continue; }
        r->client = client;
        r->path = b->path;
        if (pthread_create(&thread, NULL, relay, r) != 0) {  /* no thread left (the pids limit) */
            close(client);
            free(r);
            continue;
        }
        pthread_detach(thread);
    }
    return NULL;
}

static int listen_on(int port) {
    int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sock < 0) return -1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(sock, (struct sockaddr *)&address, sizeof address) != 0 || listen(sock, 128) != 0) {
        close(sock);
        return -1;
    }
    return sock;
}

int main(int argc, char **argv) {
    struct bridge bridges[MAX_BRIDGES];
    int count = 0, index = 1;
    while (index < argc && strcmp(argv[index], "--bridge") == 0) {
        if (index + 2 >= argc || count == MAX_BRIDGES) {
            fprintf(stderr, "wfbench-bridge: --bridge needs PORT and SOCKET\n");
            return SETUP_FAILED;
        }
        char *end = NULL;
        long port = strtol(argv[index + 1], &end, 10);
        if (end == argv[index + 1] || *end != '\0' || port <= 0 || port >= 65536) {
            fprintf(stderr, "wfbench-bridge: port out of range: %s\n", argv[index + 1]);
            return SETUP_FAILED;
        }
        bridges[count].port = (int)port;
        bridges[count].path = argv[index + 2];
        count++;
        index += 3;
    }
    if (index >= argc || strcmp(argv[index], "--") != 0 || index + 1 >= argc) {
        fprintf(stderr, "wfbench-bridge: expected -- PROGRAM [ARG]...\n");
        return SETUP_FAILED;
    }
    for (int i = 0; i < count; i++) {
        bridges[i].listener = listen_on(bridges[i].port);
        if (bridges[i].listener < 0) return fail("cannot listen on 127.0.0.1");
    }
    signal(SIGPIPE, SIG_IGN);
    pid_t pid;
    int spawned = posix_spawn(&pid, argv[index + 1], NULL, NULL, &argv[index + 1], environ);
    if (spawned != 0) {
        errno = spawned;
        return fail(argv[index + 1]);
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        for (int fd = 0; fd < 3; fd++) dup2(null, fd);
        if (null > 2) close(null);
    }
    for (int i = 0; i < count; i++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, &bridges[i]) == 0) pthread_detach(thread);
    }
    for (;;) {
        int status;
        pid_t found = waitpid(-1, &status, 0);
        if (found < 0) {
            if (errno == EINTR) continue;
            _exit(SETUP_FAILED);
        }
        if (found == pid) {
            if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
            _exit(128 + WTERMSIG(status));
        }
    }
}
