# slurm_lib.sh - what the Slurm tests that submit batch jobs share (sourced).
#
# The sourcing script sets `me` (its name), `root` (the checkout) and `work` (its directory)
# first, and keeps the id of the batch job it waits for in `job`. Provides:
#   slurm_up        the private cluster of tests/setup/slurm-local.sh: started when it does not
#                   run (and stopped again by slurm_cleanup), SLURM_CONF exported; exits 77
#                   when it cannot be started
#   slurm_cleanup   for the EXIT trap: cancels $job if set, stops the cluster slurm_up started,
#                   removes $work (KEEP=1 keeps it)

started_cluster=0
job=""

slurm_up() {
  if ! "$root/tests/setup/slurm-local.sh" status >/dev/null 2>&1; then
    if ! "$root/tests/setup/slurm-local.sh" start >"$work/slurm-start.log" 2>&1; then
      printf '%s: SKIP: cannot start the private Slurm cluster: %s\n' "$me" "$(tail -1 "$work/slurm-start.log")"
      exit 77
    fi
    started_cluster=1
  fi
  eval "$("$root/tests/setup/slurm-local.sh" env)"
  export SLURM_CONF
}

slurm_cleanup() {
  if [ -n "$job" ]; then scancel "$job" 2>/dev/null || true; fi
  if [ "$started_cluster" = 1 ]; then "$root/tests/setup/slurm-local.sh" stop >/dev/null 2>&1 || true; fi
  if [ "${KEEP:-0}" != 1 ]; then rm -rf "$work"; else printf '%s: kept %s\n' "$me" "$work"; fi
}
