# apt_source.sh - sourced: downloads the files of a Debian source package (bookworm) through a
# private apt configuration: its own sources.list with one deb-src line, lists and cache under
# the destination, so the machine's apt sources are never read or changed.  apt checks every
# file against the signed index and deletes one that does not match.  Used by
# tests/mpich/prepare-tree.sh (MPICH's test suite) and tests/realapps/hpcc.sh.
#
#   apt_source_fetch DEST PACKAGE=VERSION LOG
#     0: apt-get fetched every file into DEST; 1: the deb-src index could not be downloaded;
#     2: not every file of the package could (the archive may lack some: callers that need
#     only the orig tarball look for it).  apt-get's output goes to LOG.

apt_source_fetch() {
  local dest=$1 spec=$2 log=$3 apt=$1/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
    >"$apt/sources.list"
  local opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
              -o "APT::Sandbox::User=$(id -un)")
  apt-get "${opts[@]}" update >"$log" 2>&1 || return 1
  (cd "$dest" && apt-get "${opts[@]}" source --download-only "$spec") >>"$log" 2>&1 || return 2
}
