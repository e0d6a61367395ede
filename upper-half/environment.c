/* Upper-half environment (see environment.h). */
#define _GNU_SOURCE
#include "environment.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mana/upper_env.h"

static char *prefixed(const char *name, const char *first, const char *old, char sep)
{
  char *s = NULL;
  int n = (old && *old) ? asprintf(&s, "%s=%s%c%s", name, first, sep, old)
                        : asprintf(&s, "%s=%s", name, first);
  return n < 0 ? NULL : s;
}

/* Variables mana_lh set for itself (listed in MANA_LH_ENV_ADDED, comma-separated) and the
 * bookkeeping variables themselves never reach the application. */
static int added_by_lower_half(const char *entry, const char *added)
{
  size_t name_len = strcspn(entry, "=");
  if ((name_len == 17 && strncmp(entry, "MANA_LH_ENV_ADDED", 17) == 0) ||
      (name_len == 16 && strncmp(entry, "MANA_LH_REEXECED", 16) == 0))
    return 1;
  for (const char *p = added; *p;) {
    size_t len = strcspn(p, ",");
    if (len == name_len && strncmp(p, entry, len) == 0)
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

char **mana_upper_environment(char *const envp[], const char *stub_dir)
{
  size_t n = 0;
  while (envp[n])
    n++;
  char **out = calloc(n + 4, sizeof(char *));
  if (!out)
    return NULL;
  const char *ld_path = NULL, *tunables = NULL, *added = "";
  for (size_t i = 0; i < n; i++)
    if (strncmp(envp[i], "MANA_LH_ENV_ADDED=", 18) == 0)
      added = envp[i] + 18;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (added_by_lower_half(envp[i], added))
      continue;
    if (strncmp(envp[i], "LD_LIBRARY_PATH=", 16) == 0)
      ld_path = envp[i] + 16;
    else if (strncmp(envp[i], "GLIBC_TUNABLES=", 15) == 0)
      tunables = envp[i] + 15;
    else
      out[k++] = envp[i];
  }
  out[k++] = prefixed("LD_LIBRARY_PATH", stub_dir, ld_path, ':');
  out[k++] = prefixed("GLIBC_TUNABLES", MANA_UPPER_TUNABLES, tunables, ':');
  out[k++] = prefixed(MANA_UPPER_STUB_DIR_ENV, stub_dir, NULL, 0);
  out[k] = NULL;
  if (!out[k - 1] || !out[k - 2] || !out[k - 3]) {
    free(out);
    return NULL;
  }
  return out;
}
