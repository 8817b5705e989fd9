#define _GNU_SOURCE
/* The floor of scripts/bench-serve: the least a server can do for a feed request on this
   machine. One read and one write a request on a kept-alive connection, answers prepared
   beforehand, epoll, one thread. It parses nothing beyond the end of each head and whether it
   carries a validator (then 304, whatever the validator says); it has no deadlines, limits,
   logs or errors worth the name. Not a server to run: a measure of what the kernel costs a
   request, the bound no server on sockets passes here.

   Usage: floor-server PORT BODY_FILE ETAG LAST_MODIFIED */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *full, *notModified;
static size_t fullLength, notModifiedLength;

static void prepare(const char *bodyPath, const char *etag, const char *lastModified) {
    FILE *file = fopen(bodyPath, "rb");
    if (!file) { perror(bodyPath); exit(1); }
    struct stat info; fstat(fileno(file), &info);
    char head[1024], date[64];
    time_t now = time(NULL); strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime(&now));
    int headLength = snprintf(head, sizeof head,
        "HTTP/1.1 200 OK\r\nDate: %s\r\nETag: %s\r\nLast-Modified: %s\r\nCache-Control: public, max-age=300\r\n"
        "Vary: Accept-Encoding\r\nContent-Type: application/json\r\nContent-Length: %lld\r\n\r\n",
        date, etag, lastModified, (long long)info.st_size);
    fullLength = headLength + info.st_size;
    full = malloc(fullLength); memcpy(full, head, headLength);
    if (fread(full + headLength, 1, info.st_size, file) != (size_t)info.st_size) { perror("read"); exit(1); }
    fclose(file);
    notModified = malloc(1024);
    notModifiedLength = snprintf(notModified, 1024,
        "HTTP/1.1 304 Not Modified\r\nDate: %s\r\nETag: %s\r\nLast-Modified: %s\r\nCache-Control: public, max-age=300\r\n"
        "Vary: Accept-Encoding\r\n\r\n", date, etag, lastModified);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: %s PORT BODY_FILE ETAG LAST_MODIFIED\n", argv[0]); return 2; }
    prepare(argv[2], argv[3], argv[4]);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), yes = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 1024)) { perror("listen"); return 1; }
    int poller = epoll_create1(0);
    struct epoll_event event = { .events = EPOLLIN, .data.fd = listener }, events[256];
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    static char buffer[16384];
    for (;;) {
        int ready = epoll_wait(poller, events, 256, -1);
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
                    struct epoll_event added = { .events = EPOLLIN, .data.fd = client };
                    epoll_ctl(poller, EPOLL_CTL_ADD, client, &added);
                }
                continue;
            }
            ssize_t count = read(fd, buffer, sizeof buffer - 1);
            if (count <= 0) { if (count == 0 || errno != EAGAIN) close(fd); continue; }
            buffer[count] = 0;
            /* One answer per complete head in what arrived (wrk sends one at a time). */
            for (char *start = buffer, *end; (end = strstr(start, "\r\n\r\n")) != NULL; start = end + 4) {
                *end = 0;  /* the head alone, for the validator's search */
                int conditional = strstr(start, "If-None-Match") || strstr(start, "If-Modified-Since");
                const char *answer = conditional ? notModified : full;
                size_t length = conditional ? notModifiedLength : fullLength;
                if (write(fd, answer, length) != (ssize_t)length) { close(fd); break; }
            }
        }
    }
}
