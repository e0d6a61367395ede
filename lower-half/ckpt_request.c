/* mana_ask_checkpoint (ckpt_request.h). */
#include "ckpt_request.h"

#include <string.h>

#include "coord_client.h"
#include "mana/fail.h"

#define ANSWER_TIMEOUT_MS 10000

int mana_ask_checkpoint(bool kill, unsigned exit_status, bool join, uint64_t *gen, char *err,
                        size_t errlen)
{
  struct coord_endpoint ep;
  struct coord_msg msg;
  int rc = coord_endpoint_from_env(&ep, err, errlen);
  if (rc == 1)
    return mana_fail(err, errlen, 0, "the job has no coordinator");
  if (rc != 0)
    return -1;
  struct coord_client *c = coord_client_connect(&ep, ANSWER_TIMEOUT_MS, err, errlen);
  if (!c)
    return -1;
  struct coord_line *line = NULL;
  rc = -1;
  if (coord_client_hello_control(c, ANSWER_TIMEOUT_MS) != 0 ||
      !(line = coord_client_line(c, "CHECKPOINT"))) {
    mana_fail(err, errlen, 0, "%s", coord_client_error(c));
  } else {
    if (kill)
      coord_line_u64(line, "kill", 1);
    if (kill && exit_status)
      coord_line_u64(line, "status", exit_status);
    if (join)
      coord_line_u64(line, "join", 1);
    if (coord_client_send(c, line) != 0 || coord_client_recv(c, &msg, ANSWER_TIMEOUT_MS) != 1)
      mana_fail(err, errlen, 0, "no answer: %s", coord_client_error(c));
    else if (strcmp(msg.verb, "OK") != 0 || !coord_msg_get(&msg, "gen") ||
             !coord_parse_u64(coord_msg_get(&msg, "gen"), gen))
      mana_fail(err, errlen, 0, "the coordinator refused: %s",
                coord_msg_get(&msg, "reason") ? coord_msg_get(&msg, "reason") : msg.verb);
    else
      rc = 0;
  }
  coord_client_close(c);
  return rc;
}
