/* Names of the checkpoint signal and its action (ckpt_signal.h). */
#define _GNU_SOURCE
#include "ckpt_signal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mana/boundary.h"

static const struct {
  const char *name;
  int signo;
} named[] = {
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},
    {"ALRM", SIGALRM},
    {"TERM", SIGTERM},
    {"CONT", SIGCONT},
    {"TSTP", SIGTSTP},
    {"URG", SIGURG},
    {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},
    {"PWR", SIGPWR},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    /* named so that they are refused with the reason */
    {"KILL", SIGKILL},
    {"STOP", SIGSTOP},
    {"SYS", SIGSYS},
    {"SEGV", SIGSEGV},
    {"BUS", SIGBUS},
    {"ILL", SIGILL},
    {"FPE", SIGFPE},
    {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT},
    {"CHLD", SIGCHLD},
};

#define ACCEPTED "a signal name such as USR1 or SIGUSR2, RTMIN+N, or a number"

static bool owned_by_mana(int signo)
{
  switch (signo) {
  case SIGKILL:
  case SIGSTOP: /* cannot be caught */
  case SIGSYS:
  case MANA_PARK_SIGNAL: /* the seccomp trap and parking */
  case SIGSEGV:
  case SIGBUS:
  case SIGILL:
  case SIGFPE:
  case SIGTRAP:
  case SIGABRT:
  case SIGCHLD: /* the launcher's and the coordinator's */
    return true;
  default:
    return false;
  }
}

static int number(const char *s, long lo, long hi, long *out)
{
  char *end;
  long v;

  if (!*s || *s == '-' || *s == '+')
    return -1;
  v = strtol(s, &end, 10);
  if (*end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int ckpt_signal_parse(const char *text, int *signo, const char **why)
{
  const char *s = text;
  long n = 0;
  int sig = 0;

  *why = ACCEPTED;
  if (!s || !*s)
    return -1;
  if (number(s, 1, SIGRTMAX, &n) == 0) {
    sig = (int)n;
  } else {
    if (strncasecmp(s, "SIG", 3) == 0)
      s += 3;
    if (strncasecmp(s, "RTMIN+", 6) == 0) {
      if (number(s + 6, 0, SIGRTMAX - SIGRTMIN, &n) != 0)
        return -1;
      sig = SIGRTMIN + (int)n;
    } else if (strcasecmp(s, "RTMIN") == 0) {
      sig = SIGRTMIN;
    } else {
      for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (strcasecmp(s, named[i].name) == 0)
          sig = named[i].signo;
      if (!sig)
        return -1;
    }
  }
  if (owned_by_mana(sig)) {
    *why = "that signal cannot be caught or mana needs it for itself";
    return -1;
  }
  *signo = sig;
  return 0;
}

int ckpt_signal_action_parse(const char *text, enum ckpt_signal_action *action)
{
  if (text && strcmp(text, "kill") == 0)
    *action = CKPT_SIGNAL_KILL;
  else if (text && strcmp(text, "checkpoint") == 0)
    *action = CKPT_SIGNAL_CHECKPOINT;
  else
    return -1;
  return 0;
}

const char *ckpt_signal_name(int signo, char *buf, unsigned len)
{
  for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
    if (named[i].signo == signo) {
      snprintf(buf, len, "%s", named[i].name);
      return buf;
    }
  if (signo >= SIGRTMIN && signo <= SIGRTMAX)
    snprintf(buf, len, "RTMIN+%d", signo - SIGRTMIN);
  else
    snprintf(buf, len, "%d", signo);
  return buf;
}
