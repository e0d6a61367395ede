/* coord_net: host:port syntax, connect with a time limit, listen (see coord_net.h). */
#include "coord_net.h"
#include "coord_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "mana/fail.h"

long long coord_now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long coord_now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int coord_remaining_ms(long long deadline_ms)
{
  long long left;

  if (deadline_ms < 0)
    return -1;
  left = deadline_ms - coord_now_ms();
  if (left < 0)
    return 0;
  return left > 1000000000 ? 1000000000 : (int)left;
}

static int valid_port(const char *s)
{
  long v = 0;

  if (!*s || strlen(s) > 5)
    return 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return 0;
    v = v * 10 + (*s - '0');
  }
  return v >= 1 && v <= 65535;
}

int coord_hostport_split(const char *hostport, char host[COORD_HOST_MAX], char port[COORD_PORT_MAX],
                         char *err, size_t errlen)
{
  const char *colon = strrchr(hostport, ':');
  const char *hbegin = hostport;
  size_t hlen;

  if (!colon)
    return mana_fail(err, errlen, 0, "'%s' is not HOST:PORT", hostport);
  hlen = (size_t)(colon - hostport);
  if (hostport[0] == '[') {
    if (hlen < 3 || hostport[hlen - 1] != ']')
      return mana_fail(err, errlen, 0, "'%s' is not [IPv6-ADDRESS]:PORT", hostport);
    hbegin++;
    hlen -= 2;
  } else if (memchr(hostport, ':', hlen)) {
    return mana_fail(err, errlen, 0,
                     "'%s': write an IPv6 address in brackets, "
                     "e.g. [::1]:7779",
                     hostport);
  }
  if (hlen == 0 || hlen >= COORD_HOST_MAX)
    return mana_fail(err, errlen, 0, "'%s' has no usable host part", hostport);
  if (!valid_port(colon + 1))
    return mana_fail(err, errlen, 0, "'%s': the port must be a number from 1 to 65535", hostport);
  memcpy(host, hbegin, hlen);
  host[hlen] = '\0';
  snprintf(port, COORD_PORT_MAX, "%s", colon + 1);
  return 0;
}

void coord_hostport_join(char *out, size_t len, const char *host, unsigned port)
{
  if (strchr(host, ':'))
    snprintf(out, len, "[%s]:%u", host, port);
  else
    snprintf(out, len, "%s:%u", host, port);
}

static void set_nodelay(int fd)
{
  int one = 1;

  /* Checkpoint rounds are request/response; Nagle would add 40 ms per round. */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Waits for a non-blocking connect; returns 0 or an errno value. */
static int finish_connect(int fd, long long deadline)
{
  struct pollfd pfd = {.fd = fd, .events = POLLOUT};
  int soerr = 0;
  socklen_t len = sizeof(soerr);
  int n;

  do
    n = poll(&pfd, 1, coord_remaining_ms(deadline));
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return errno;
  if (n == 0)
    return ETIMEDOUT;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
    return errno;
  return soerr;
}

static int try_address(const struct addrinfo *ai, long long deadline, int *err_out)
{
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  int e;

  if (fd < 0) {
    *err_out = errno;
    return -1;
  }
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
    e = 0;
  else if (errno == EINPROGRESS || errno == EINTR) /* both go on in the background */
    e = finish_connect(fd, deadline);
  else
    e = errno;
  if (e) {
    close(fd);
    *err_out = e;
    return -1;
  }
  set_nodelay(fd);
  return fd;
}

int coord_connect(const char *host, const char *port, int timeout_ms, char *err, size_t errlen)
{
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res, *ai;
  long long deadline = timeout_ms < 0 ? -1 : coord_now_ms() + timeout_ms;
  int rc, fd = -1, last = ECONNREFUSED;

  rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0)
    return mana_fail(err, errlen, 0, "cannot resolve coordinator host '%s': %s", host,
                     gai_strerror(rc));
  for (ai = res; ai && fd < 0; ai = ai->ai_next)
    fd = try_address(ai, deadline, &last);
  freeaddrinfo(res);
  if (fd < 0) {
    char where[COORD_HOSTPORT_MAX];

    coord_hostport_join(where, sizeof(where), host, (unsigned)atoi(port));
    return mana_fail(err, errlen, last, "cannot connect to the coordinator at %s", where);
  }
  return fd;
}

static unsigned local_port(int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);

  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
    return 0;
  if (ss.ss_family == AF_INET)
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  if (ss.ss_family == AF_INET6)
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return 0;
}

static int bind_address(const struct addrinfo *ai, int *err_out)
{
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  int one = 1;

  if (fd < 0) {
    *err_out = errno;
    return -1;
  }
  /* a restarted coordinator must be able to reuse its fixed port at once */
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
    *err_out = errno;
    close(fd);
    return -1;
  }
  return fd;
}

int coord_listen(const char *host, const char *port, unsigned *bound_port, char *err, size_t errlen)
{
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
  struct addrinfo *res, *ai;
  int rc, fd = -1, last = EADDRNOTAVAIL;

  /* Without a host, IPv4's wildcard: every cluster network reaches it. */
  if (!host)
    hints.ai_family = AF_INET;
  rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0)
    return mana_fail(err, errlen, 0, "cannot resolve listen address '%s': %s", host ? host : "*",
                     gai_strerror(rc));
  for (ai = res; ai && fd < 0; ai = ai->ai_next)
    fd = bind_address(ai, &last);
  freeaddrinfo(res);
  if (fd < 0)
    return mana_fail(err, errlen, last, "cannot listen on %s port %s", host ? host : "*", port);
  *bound_port = local_port(fd);
  return fd;
}

/* ------------------------------------------------------------------------------------- */
/* The local door                                                                        */
/* ------------------------------------------------------------------------------------- */

size_t coord_local_name(const char *port, const char *secret, char out[COORD_LOCAL_NAME_MAX])
{
  /* FNV-1a: the name only has to differ between coordinators, the peer's user id is
   * what admits a client */
  uint64_t h = 0xcbf29ce484222325ull;
  int n;

  for (const char *p = secret; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  out[0] = '\0';
  n = snprintf(out + 1, COORD_LOCAL_NAME_MAX - 1, "mana-coordinator-%s-%016llx", port,
               (unsigned long long)h);
  return 1 + (size_t)n;
}

static socklen_t local_address(struct sockaddr_un *sun, const char *name, size_t len)
{
  memset(sun, 0, sizeof(*sun));
  sun->sun_family = AF_UNIX;
  memcpy(sun->sun_path, name, len);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
}

int coord_listen_local(const char *name, size_t len, char *err, size_t errlen)
{
  struct sockaddr_un sun;
  socklen_t sl = local_address(&sun, name, len);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

  if (fd < 0)
    return mana_fail(err, errlen, errno, "cannot create the local socket");
  if (bind(fd, (struct sockaddr *)&sun, sl) != 0 || listen(fd, SOMAXCONN) != 0) {
    int e = errno;

    close(fd);
    return mana_fail(err, errlen, e, "cannot listen on the local socket @%s", name + 1);
  }
  return fd;
}

int coord_connect_local(const char *name, size_t len)
{
  struct sockaddr_un sun;
  socklen_t sl = local_address(&sun, name, len);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

  if (fd < 0)
    return -1;
  /* a Unix stream connect completes at once or fails (EAGAIN: backlog full) */
  if (connect(fd, (struct sockaddr *)&sun, sl) != 0) {
    int e = errno;

    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}
