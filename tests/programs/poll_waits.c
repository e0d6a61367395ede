/*
 * poll_waits.c - threads waiting in the calls that any signal handler ends with EINTR (the
 * kernel never makes them again after one), each for an event only the main thread gives:
 *   - poll() on pipes, once with no timeout and once with 600 s; ppoll(), select() and
 *     pselect() (twice) on pipes with 600 s: each must return 1, the pipe readable (select
 *     with more than 500 s left, which Linux writes back); ppoll and one pselect with every
 *     signal blocked while they wait, the other pselect with no mask of its own;
 *   - epoll_wait(), epoll_pwait() without a mask and with every signal blocked, and
 *     epoll_pwait2() without a mask and with every signal blocked, with 600 s, each on an epoll
 *     instance of its own that watches a pipe: each must return the one event, with its data;
 *   - pause() and sigsuspend(), ended by the program's own SIGUSR1 and SIGUSR2 (handlers
 *     counting them): each must return -1 with EINTR only after the main thread sent its
 *     signal, the handler having run once; sigsuspend with every signal but SIGUSR2 blocked;
 *   - sigwaitinfo() for SIGRTMIN+1, blocked everywhere, which the main thread queues to it
 *     with a value: it must return that signal with that value;
 *   - msgrcv() on a System V message queue and semop() decrementing a System V semaphore,
 *     for the message and the increment the main thread gives: each must return 0 (msgrcv
 *     the message's length) with the message's text;
 *   - sem_timedwait() on a POSIX semaphore with a deadline 600 s ahead, for the main thread's
 *     sem_post: it must return 0;
 *   - sigwait() on a full set, with every signal blocked (a program's signal thread), for the
 *     SIGRTMIN+4 the main thread sends it: it must return that signal and no other;
 *   - write() and writev() of 1 MiB to a pipe, send() and sendmsg() of 1 MiB on a Unix stream
 *     socket (the vectors in three buffers and an empty one), each waiting for room (the pipe
 *     holds 64 KiB) until the main thread reads it all: each must return the whole 1 MiB, and
 *     the main thread must read every byte in order (the sends not with POLL_WAITS_GO, below).
 * Natively nothing else ends them.  Under mana a checkpoint's park signal interrupts each of
 * them; they must not fail for it, but wait on, also after a restart (the park makes them
 * again: lower-half/interrupted_waits.c; poll and epoll_wait with a timeout are made in
 * trampolines that keep the time left, lower-half/poll_timeout.c, and so are the epoll waits
 * with a mask or epoll_pwait2's timespec, lower-half/masked_waits.c; the epoll instance comes
 * back at a restart, lower-half/state_epolls.c).  And the masks that block every signal must not
 * block the park signal, or the threads cannot be parked and the checkpoint is aborted
 * (lower-half/masked_waits.c).
 *
 * By default the main thread gives the events once every thread waits.  With
 * POLL_WAITS_GO=FILE each rank says on stderr
 *   poll_waits: rank R pid P waiting
 * and gives them only once FILE exists (tests/integration/waits_in_checkpoint.sh checkpoints
 * the ranks in between); no thread sends on a socket then, which would make the checkpoint
 * refuse.  Ranks: any.  Arguments: none.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mpitest.h"

enum {
  POLL,
  POLL_TIMED,
  PPOLL,
  SELECT,
  PSELECT,
  PSELECT_NO_MASK,
  EPOLL_TIMED,
  EPOLL_PWAIT_TIMED,
  EPOLL_PWAIT_MASKED,
  EPOLL_PWAIT2_TIMED,
  EPOLL_PWAIT2_MASKED,
  PAUSE,
  SIGSUSPEND,
  SIGWAITINFO,
  MSGRCV,
  SEMOP,
  SEM_TIMEDWAIT,
  SIGWAIT_ALL,
  PIPE_WRITE,
  PIPE_WRITEV,
  SOCKET_SEND,
  SOCKET_SENDMSG,
  NWAITERS
};
static const char *const names[NWAITERS] = {"poll",
                                            "poll with 600 s",
                                            "ppoll",
                                            "select",
                                            "pselect",
                                            "pselect with no mask",
                                            "epoll_wait with 600 s",
                                            "epoll_pwait with 600 s and no mask",
                                            "epoll_pwait with 600 s and every signal blocked",
                                            "epoll_pwait2 with 600 s and no mask",
                                            "epoll_pwait2 with 600 s and every signal blocked",
                                            "pause",
                                            "sigsuspend",
                                            "sigwaitinfo",
                                            "msgrcv",
                                            "semop",
                                            "sem_timedwait",
                                            "sigwait on every signal",
                                            "write of 1 MiB to a pipe",
                                            "writev of 1 MiB in 3 buffers to a pipe",
                                            "send of 1 MiB on a stream socket",
                                            "sendmsg of 1 MiB in 3 buffers on a stream socket"};
/* The call each waits in, as /proc/self/task/TID/syscall shows it (select is a pselect6,
 * semop a semtimedop without a timeout; under mana a poll or an epoll wait with a timeout is
 * a ppoll). */
static const long calls[NWAITERS] = {
    SYS_poll,         SYS_poll,       SYS_ppoll,           SYS_pselect6,        SYS_pselect6,
    SYS_pselect6,     SYS_epoll_wait, SYS_epoll_pwait,     SYS_epoll_pwait,     SYS_epoll_pwait2,
    SYS_epoll_pwait2, SYS_pause,      SYS_rt_sigsuspend,   SYS_rt_sigtimedwait, SYS_msgrcv,
    SYS_semtimedop,   SYS_futex,      SYS_rt_sigtimedwait, SYS_write,           SYS_writev,
    SYS_sendto,       SYS_sendmsg};

static int is_epoll(int kind)
{
  return kind >= EPOLL_TIMED && kind <= EPOLL_PWAIT2_MASKED;
}

/* The call a waiter may wait in instead under mana: a poll or an epoll wait with a timeout is
 * made as a ppoll, and the rest of a writev or sendmsg a park cut short goes out with write or
 * sendto (-1: none). */
static long under_mana(int kind)
{
  if (kind == POLL_TIMED || is_epoll(kind))
    return SYS_ppoll;
  return kind == PIPE_WRITEV ? SYS_write : kind == SOCKET_SENDMSG ? SYS_sendto : -1;
}

struct waiter {
  int kind, fds[2];
  volatile pid_t tid;
  long rc;
  int err;
  int ready;       /* poll, ppoll, select: the pipe was readable */
  long left_s;     /* select: seconds left */
  int sent_before; /* pause, sigsuspend: the signal had been sent when the call returned */
  int value;       /* sigwaitinfo: the value queued with the signal */
  int ipc_id;      /* msgrcv, semop: the queue or semaphore set */
  char text[8];    /* msgrcv: the message */
  pthread_t thread;
};
static struct waiter waiters[NWAITERS];
#define BIG_WRITE (1 << 20)
static unsigned char big[BIG_WRITE]; /* what the write and the send take: a counting pattern */
static sem_t posted;
static volatile sig_atomic_t caught_usr1, caught_usr2;
static volatile int sent_usr1, sent_usr2;

static void on_signal(int sig)
{
  if (sig == SIGUSR1)
    caught_usr1++;
  else
    caught_usr2++;
}

static void *wait_in_call(void *arg)
{
  struct waiter *w = arg;
  int fd = w->fds[0];
  sigset_t all;
  sigfillset(&all);
  if (w->kind == PAUSE) { /* this thread alone takes SIGUSR1 */
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  }
  if (!is_epoll(w->kind)) /* those once their instance is */
    __atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  switch (w->kind) {
  case POLL:
  case POLL_TIMED: {
    struct pollfd p = {fd, POLLIN, 0};
    w->rc = poll(&p, 1, w->kind == POLL ? -1 : 600000);
    w->ready = (p.revents & POLLIN) != 0;
    break;
  }
  case PPOLL: {
    struct pollfd p = {fd, POLLIN, 0};
    struct timespec ts = {600, 0};
    w->rc = ppoll(&p, 1, &ts, &all);
    w->ready = (p.revents & POLLIN) != 0;
    break;
  }
  case SELECT: {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(fd, &set);
    struct timeval tv = {600, 0};
    w->rc = select(fd + 1, &set, NULL, NULL, &tv);
    w->ready = FD_ISSET(fd, &set) != 0;
    w->left_s = tv.tv_sec; /* Linux writes the time left back */
    break;
  }
  case PSELECT:
  case PSELECT_NO_MASK: {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(fd, &set);
    struct timespec ts = {600, 0};
    w->rc = pselect(fd + 1, &set, NULL, NULL, &ts, w->kind == PSELECT ? &all : NULL);
    w->ready = FD_ISSET(fd, &set) != 0;
    break;
  }
  case EPOLL_TIMED:
  case EPOLL_PWAIT_TIMED:
  case EPOLL_PWAIT_MASKED:
  case EPOLL_PWAIT2_TIMED:
  case EPOLL_PWAIT2_MASKED: {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 77}, got = {0, {0}};
    struct timespec ts = {600, 0};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      w->rc = -2;
      break;
    }
    __atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    if (w->kind == EPOLL_TIMED)
      w->rc = epoll_wait(ep, &got, 1, 600000);
    else if (w->kind == EPOLL_PWAIT_TIMED || w->kind == EPOLL_PWAIT_MASKED)
      w->rc = epoll_pwait(ep, &got, 1, 600000, w->kind == EPOLL_PWAIT_MASKED ? &all : NULL);
    else
      w->rc = epoll_pwait2(ep, &got, 1, &ts, w->kind == EPOLL_PWAIT2_MASKED ? &all : NULL);
    w->ready = (got.events & EPOLLIN) && got.data.u64 == 77;
    break;
  }
  case PAUSE:
    w->rc = pause();
    w->sent_before = __atomic_load_n(&sent_usr1, __ATOMIC_ACQUIRE);
    break;
  case SIGSUSPEND:
    sigdelset(&all, SIGUSR2); /* SIGUSR2 alone, and only while suspended */
    w->rc = sigsuspend(&all);
    w->sent_before = __atomic_load_n(&sent_usr2, __ATOMIC_ACQUIRE);
    break;
  case SIGWAITINFO: {
    sigset_t one;
    siginfo_t info = {0};
    sigemptyset(&one);
    sigaddset(&one, SIGRTMIN + 1);
    w->rc = sigwaitinfo(&one, &info);
    w->value = info.si_value.sival_int;
    break;
  }
  case MSGRCV: {
    struct {
      long type;
      char text[8];
    } m = {0, ""};
    w->rc = msgrcv(w->ipc_id, &m, sizeof(m.text), 1, 0);
    memcpy(w->text, m.text, sizeof(w->text));
    break;
  }
  case SEMOP: {
    struct sembuf down = {0, -1, 0};
    w->rc = semop(w->ipc_id, &down, 1);
    break;
  }
  case SIGWAIT_ALL: { /* all but glibc's own two, which its sigwait leaves out */
    int sig = 0;
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    w->rc = sigwait(&all, &sig);
    w->value = sig;
    break;
  }
  case PIPE_WRITE:
    w->rc = write(w->fds[1], big, BIG_WRITE);
    break;
  case SOCKET_SEND:
    w->rc = send(w->fds[1], big, BIG_WRITE, 0);
    break;
  case PIPE_WRITEV:
  case SOCKET_SENDMSG: { /* three buffers of uneven sizes, one empty between */
    struct iovec v[4] = {{big, 300000},
                         {big + 300000, 0},
                         {big + 300000, 500000},
                         {big + 800000, BIG_WRITE - 800000}};
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 4};
    w->rc = w->kind == PIPE_WRITEV ? writev(w->fds[1], v, 4) : sendmsg(w->fds[1], &m, 0);
    break;
  }
  case SEM_TIMEDWAIT: {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 600;
    w->rc = sem_timedwait(&posted, &deadline);
    break;
  }
  }
  w->err = errno;
  return NULL;
}

int main(int argc, char **argv)
{
  /* Blocked in every thread (MPI's too) but where a waiter takes them. */
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR1);
  sigaddset(&both, SIGUSR2);
  sigaddset(&both, SIGRTMIN + 1);
  pthread_sigmask(SIG_BLOCK, &both, NULL);
  MPI_Init(&argc, &argv);
  mt_begin("poll_waits");
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  sem_init(&posted, 0, 0);
  for (int i = 0; i < BIG_WRITE; i++)
    big[i] = (unsigned char)(i * 7 + i / 4096);
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);

  /* A socket makes a checkpoint refuse (a restart could not give it back): the send waits
   * only in the runs without one (the launch forms, the park storm). */
  const char *go = getenv("POLL_WAITS_GO");
  int nwaiters = go ? SOCKET_SEND : NWAITERS;
  for (int k = 0; k < nwaiters; k++) {
    struct waiter *w = &waiters[k];
    w->kind = k;
    w->ipc_id = k == MSGRCV  ? msgget(IPC_PRIVATE, 0600)
                : k == SEMOP ? semget(IPC_PRIVATE, 1, 0600)
                             : 0;
    if (w->ipc_id < 0)
      mt_die("msgget or semget failed");
    int made = k >= SOCKET_SEND ? socketpair(AF_UNIX, SOCK_STREAM, 0, w->fds) : pipe(w->fds);
    if (made != 0 || pthread_create(&w->thread, NULL, wait_in_call, w) != 0)
      mt_die("pipe, socketpair or pthread_create failed");
  }
  for (int k = 0; k < nwaiters; k++) {
    pid_t tid;
    while ((tid = __atomic_load_n(&waiters[k].tid, __ATOMIC_ACQUIRE)) == 0)
      mt_pause_ms(1);
    while (mt_waiting_in(tid) != calls[k] && mt_waiting_in(tid) != under_mana(k))
      mt_pause_ms(1);
  }
  if (go) {
    fprintf(stderr, "poll_waits: rank %d pid %d waiting\n", rank, (int)getpid());
    fflush(stderr);
    while (access(go, F_OK) != 0)
      mt_pause_ms(5);
  }
  for (int k = POLL; k <= EPOLL_PWAIT2_MASKED; k++)
    if (write(waiters[k].fds[1], "x", 1) != 1)
      mt_die("write to a pipe failed");
  __atomic_store_n(&sent_usr1, 1, __ATOMIC_RELEASE);
  pthread_kill(waiters[PAUSE].thread, SIGUSR1);
  __atomic_store_n(&sent_usr2, 1, __ATOMIC_RELEASE);
  pthread_kill(waiters[SIGSUSPEND].thread, SIGUSR2);
  /* fail (ESRCH) if the thread is gone already: its check below says why */
  pthread_sigqueue(waiters[SIGWAITINFO].thread, SIGRTMIN + 1, (union sigval){.sival_int = 41});
  pthread_kill(waiters[SIGWAIT_ALL].thread, SIGRTMIN + 4);
  struct {
    long type;
    char text[8];
  } message = {1, "hello"};
  struct sembuf up = {0, 1, 0};
  if (msgsnd(waiters[MSGRCV].ipc_id, &message, sizeof(message.text), 0) != 0 ||
      semop(waiters[SEMOP].ipc_id, &up, 1) != 0 || sem_post(&posted) != 0)
    mt_die("msgsnd, semop or sem_post failed");

  long drained[NWAITERS] = {0}, misplaced[NWAITERS] = {0};
  for (int k = PIPE_WRITE; k < nwaiters; k++) {
    static unsigned char got[65536];
    for (;;) {
      ssize_t n = read(waiters[k].fds[0], got, sizeof(got));
      if (n <= 0)
        mt_die("read of what a writer wrote failed");
      for (ssize_t i = 0; i < n; i++)
        misplaced[k] += got[i] != big[drained[k] + i];
      drained[k] += n;
      if (drained[k] >= BIG_WRITE)
        break;
    }
  }

  char what[96];
  for (int k = 0; k < nwaiters; k++) {
    struct waiter *w = &waiters[k];
    pthread_join(w->thread, NULL);
    if (k <= EPOLL_PWAIT2_MASKED) {
      snprintf(what, sizeof(what), "%s returned 1 with the pipe readable", names[k]);
      mt_check_int(what, w->rc == 1 && w->ready, 1);
      if (k == SELECT)
        mt_check_int("select had more than 500 s left", w->left_s > 500, 1);
    } else if (k == SIGWAITINFO) {
      snprintf(what, sizeof(what), "%s returned SIGRTMIN+1 with the value 41", names[k]);
      mt_check_int(what, w->rc == SIGRTMIN + 1 && w->value == 41, 1);
    } else if (k == SIGWAIT_ALL) {
      snprintf(what, sizeof(what), "%s returned SIGRTMIN+4 (signal %d)", names[k], w->value);
      mt_check_int(what, w->rc == 0 && w->value == SIGRTMIN + 4, 1);
    } else if (k == MSGRCV) {
      mt_check_int("msgrcv returned the 8 bytes of \"hello\"",
                   w->rc == 8 && strcmp(w->text, "hello") == 0, 1);
      msgctl(w->ipc_id, IPC_RMID, NULL);
    } else if (k >= PIPE_WRITE) {
      snprintf(what, sizeof(what), "%s returned", names[k]);
      mt_check_int(what, w->rc, BIG_WRITE);
      snprintf(what, sizeof(what), "%s: bytes read back, out of place", names[k]);
      mt_check(drained[k] == BIG_WRITE && misplaced[k] == 0, "%s = %ld, %ld", what, drained[k],
               misplaced[k]);
    } else if (k == SEMOP || k == SEM_TIMEDWAIT) {
      snprintf(what, sizeof(what), "%s returned 0", names[k]);
      mt_check_int(what, w->rc == 0, 1);
      if (k == SEMOP)
        semctl(w->ipc_id, 0, IPC_RMID);
    } else {
      snprintf(what, sizeof(what), "%s failed with EINTR after its signal was sent", names[k]);
      mt_check_int(what, w->rc == -1 && w->err == EINTR && w->sent_before, 1);
    }
  }
  mt_check_int("SIGUSR1 caught once", caught_usr1, 1);
  mt_check_int("SIGUSR2 caught once", caught_usr2, 1);
  return mt_end();
}
