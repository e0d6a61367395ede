#!/usr/bin/env bash
# with_ckptdir.sh COMMAND [ARGS...]: runs COMMAND with MANA_CKPTDIR set to a fresh temporary
# directory, removed afterwards, so that a test which calls mana_launch directly leaves no
# mana-ckpt/ behind in the directory it runs in. Exits with COMMAND's status.
work=$(mktemp -d "${TMPDIR:-/tmp}/mana-test-ckpt.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
MANA_CKPTDIR=$work/ckpt "$@"
