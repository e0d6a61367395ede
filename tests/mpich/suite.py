#!/usr/bin/env python3
"""suite.py - the bookkeeping of run-suite.sh: which tests, their lists, their results.

  suite.py select  --tree T --dirs D,... --maxnp N [--regex R] [--list FILE] --out MANIFEST
  suite.py lists   --tree T --manifest M --name LISTNAME [--keys FILE]
                   [--state S --native-scale F --multiplier X --base-timeout B]
  suite.py programs --manifest M [--keys FILE]
  suite.py record-native --manifest M --junit J --state S
  suite.py forget  --manifest M --state S
  suite.py keys    --manifest M --state S (--native-pass | --native-missing)
  suite.py report  --manifest M --state S --mode NAME=JUNIT[,LOGDIR] ... [--min-restart-pass P]

A test's key is "DIR/PROGRAM NP [ARG...] [NAME=VALUE...]": the directory below test/mpi, the
program, the number of processes it runs with (written "4of10" when -maxnp lowered the 10 of
the test list), its arg= and env= settings in list order; a repeated line gets " #2", ....
The key names the test everywhere: in the lists given to runtests (as env=MANA_SUITE_TEST=KEY
with '~' for spaces, which the wrappers read and runtests' JUnit output repeats), in the
state directory (native/SHA1 and calls/SHA1 hold "KEY<TAB>..."), in the report.  A native
entry is "KEY<TAB>STATUS<TAB>FIRST ERROR<TAB>SECONDS" (no SECONDS in entries of older runs).
"""
import argparse
import hashlib
import math
import os
import re
import sys
from collections import OrderedDict, defaultdict

NP_DEFAULT = 2  # runtests' default when a list line gives no process count


def sha1(key):
    return hashlib.sha1(key.encode()).hexdigest()


def encode(key):
    if '~' in key:
        sys.exit("suite.py: a test key contains '~', which the lists use for spaces: %r" % key)
    return key.replace(' ', '~')


def parse_line(raw):
    """A test list line the way runtests reads it: None for a blank or comment line."""
    line = raw.split('#', 1)[0].strip()
    if not line:
        return None
    if line.startswith('!'):
        return {'kind': 'make', 'line': line}
    words = line.split()
    opts = {'args': [], 'envs': [], 'xfail': '', 'timelimit': None}
    for w in words[2:]:
        name, sep, value = w.partition('=')
        if not sep:
            continue
        if name == 'arg':
            opts['args'].append(value)
        elif name == 'env':
            opts['envs'].append(value)
        elif name == 'xfail':
            opts['xfail'] = value
        elif name == 'timeLimit' and value.isdigit():
            opts['timelimit'] = int(value)
    np = words[1] if len(words) > 1 else ''
    return {'kind': 'entry', 'name': words[0], 'np': np, 'line': line, **opts}


def walk(tree, reldir, listname='testlist'):
    """Yields (reldir, parsed line) for every line of reldir's list, recursing into
    directory entries as runtests does."""
    path = os.path.join(tree, reldir, listname)
    if not os.path.isfile(path):
        return
    with open(path) as f:
        for raw in f:
            entry = parse_line(raw)
            if entry is None:
                continue
            if entry['kind'] == 'entry' and os.path.isdir(os.path.join(tree, reldir, entry['name'])):
                yield reldir, dict(entry, kind='dir')
                yield from walk(tree, os.path.join(reldir, entry['name']), listname)
            else:
                yield reldir, entry


def test_key(reldir, entry, maxnp):
    listed = int(entry['np']) if entry['np'] else NP_DEFAULT
    run = min(listed, maxnp) if maxnp > 0 else listed
    np = str(run) if run == listed else '%dof%d' % (run, listed)
    return ' '.join(['%s/%s' % (reldir, entry['name']), np] + entry['args'] + entry['envs'])


FIELDS = ['key', 'dir', 'listdir', 'program', 'np', 'xfail']


def read_manifest(path):
    tests = OrderedDict()
    with open(path) as f:
        for line in f:
            values = line.rstrip('\n').split('\t')
            t = dict(zip(FIELDS, values))
            t['np'] = int(t['np'])
            tests[t['key']] = t
    return tests


def read_keys(path):
    keys = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):  # keys may end in " #2": no inline comments
                keys.append(' '.join(line.split()))
    return keys


def selected_entries(tree, dirs, maxnp):
    """(key, reldir, entry) for every test of the directories, in runtests' order."""
    for d in dirs:
        if not os.path.isfile(os.path.join(tree, d, 'testlist')):
            sys.exit("suite.py: no test list %s/%s/testlist" % (tree, d))
        seen = defaultdict(int)
        for reldir, entry in walk(tree, d):
            if entry['kind'] != 'entry':
                continue
            key = test_key(reldir, entry, maxnp)
            seen[key] += 1
            if seen[key] > 1:
                key += ' #%d' % seen[key]
            yield key, reldir, entry


def cmd_select(a):
    dirs = [d for d in a.dirs.split(',') if d]
    regex = re.compile(a.regex) if a.regex else None
    wanted = read_keys(a.list) if a.list else None
    found = set()
    with open(a.out, 'w') as out:
        for key, reldir, entry in selected_entries(a.tree, dirs, a.maxnp):
            if regex and not regex.search(key):
                continue
            if wanted is not None and key not in wanted:
                continue
            found.add(key)
            np = int(key.split()[1].split('of')[0])
            out.write('\t'.join([key, reldir.split('/')[0], reldir, entry['name'], str(np),
                                 entry['xfail']]) + '\n')
    if wanted is not None:
        missing = [k for k in wanted if k not in found]
        if missing:
            sys.exit("suite.py: %s names tests that are not in the lists of %s (with -maxnp %d): %s"
                     % (a.list, ','.join(dirs), a.maxnp, '; '.join(missing)))


def with_time_limit(line, seconds):
    """The list line with timeLimit=SECONDS instead of its own limit, if it had one."""
    words = [w for w in line.split() if not w.startswith('timeLimit=')]
    return ' '.join(words + ['timeLimit=%d' % seconds])


def whole_limit(limit, multiplier):
    """The least limit from `limit` up that runtests' multiplier turns into whole seconds:
    mpiexec.mpich refuses MPIEXEC_TIMEOUT=286.5 ("Invalid character . in MPIEXEC_TIMEOUT")."""
    for candidate in range(limit, limit + 100):
        product = candidate * multiplier
        if abs(product - round(product)) < 1e-9:
            return candidate
    return limit


def native_seconds(state):
    """{key: seconds the test took natively} for the tests whose baseline has the time."""
    out = {}
    for key, fields in read_state(state, 'native').items():
        try:
            out[key] = float(fields[2])
        except (IndexError, ValueError):
            pass
    return out


def cmd_lists(a):
    """Writes LISTNAME next to every testlist that has a chosen test: the chosen lines, each
    with env=MANA_SUITE_TEST=KEY, and the directory lines that lead to them.  With
    --native-scale F, a test whose native run took T seconds gets a limit of at least F * T
    (its list's limit, or --base-timeout, is raised; runtests multiplies it by --multiplier):
    a test that needs 262 of its 270 s natively is not held to 270 s under mana."""
    tests = read_manifest(a.manifest)
    took = native_seconds(a.state) if a.state and a.native_scale > 0 else {}
    keep = set(read_keys(a.keys)) if a.keys else set(tests)
    by_listdir = defaultdict(list)
    dirs = OrderedDict((t['dir'], True) for t in tests.values())
    for d in dirs:
        seen = defaultdict(int)
        # rebuild the keys with the manifest's maxnp: np is in the key, so compare directly
        for reldir, entry in walk(a.tree, d):
            if entry['kind'] == 'dir':
                by_listdir[reldir].append(('dir', entry))
                continue
            if entry['kind'] == 'make':
                by_listdir[reldir].append(('make', entry))
                continue
            key = test_key(reldir, entry, a.maxnp)
            seen[key] += 1
            if seen[key] > 1:
                key += ' #%d' % seen[key]
            if key in tests and key in keep:
                by_listdir[reldir].append(('test', dict(entry, key=key)))
    wanted_dirs = {reldir for reldir, items in by_listdir.items()
                   if any(kind == 'test' for kind, _ in items)}
    # a directory line is needed when some directory below it has chosen tests
    def needed(reldir):
        return any(w == reldir or w.startswith(reldir + '/') for w in wanted_dirs)
    written = 0
    for reldir, items in by_listdir.items():
        if not needed(reldir):
            continue
        lines = []
        for kind, entry in items:
            if kind == 'test':
                line, secs = entry['line'], took.get(entry['key'])
                if secs:
                    need = whole_limit(math.ceil(a.native_scale * secs / a.multiplier),
                                       a.multiplier)
                    if need > (entry['timelimit'] or a.base_timeout):
                        line = with_time_limit(line, need)
                lines.append('%s env=MANA_SUITE_TEST=%s' % (line, encode(entry['key'])))
                written += 1
            elif kind == 'dir' and needed(os.path.join(reldir, entry['name'])):
                lines.append(entry['name'])
            elif kind == 'make':
                lines.append(entry['line'])
        with open(os.path.join(a.tree, reldir, a.name), 'w') as f:
            f.write('\n'.join(lines) + '\n')
    print(written)


def cmd_programs(a):
    tests = read_manifest(a.manifest)
    keep = set(read_keys(a.keys)) if a.keys else set(tests)
    progs = OrderedDict(('%s/%s' % (t['listdir'], t['program']), True)
                        for t in tests.values() if t['key'] in keep)
    print(','.join(progs))


def parse_junit(path):
    """{key: (status, output lines, seconds or None)} from runtests' JUnit file, status
    pass/fail/skip.  The
    file is read with a regular expression: runtests writes it unescaped, and an interrupted
    run leaves it unterminated."""
    results = {}
    if not os.path.isfile(path):
        return results
    with open(path, errors='replace') as f:
        text = f.read()
    for m in re.finditer(r'<testcase name="([^"]*)"([^>]*)>(.*?)</testcase>', text, re.S):
        name, body_attrs, body = m.group(1), m.group(2), m.group(3)
        km = re.search(r'MANA_SUITE_TEST=(\S+)', name)
        if not km:
            continue
        key = km.group(1).replace('~', ' ')
        if '<failure' in body:
            status = 'fail'
        elif '<skipped' in body:
            status = 'skip'
        else:
            status = 'pass'
        output = []
        if "## Test output" in body:
            for line in body.split("## Test output", 1)[1].splitlines()[1:]:
                if line.startswith('## '):
                    output.append(line[3:])
                elif line.startswith('##'):
                    output.append(line[2:])
        tm = re.search(r'time="([0-9.]+)"', body_attrs) if body_attrs else None
        results[key] = (status, output, float(tm.group(1)) if tm else None)
    return results


TIMED_OUT = re.compile(r'APPLICATION TIMED OUT')  # mpiexec.mpich at MPIEXEC_TIMEOUT
OK_LINE = re.compile(r'^\s*(No [Ee]rrors|Test Passed)\s*$')
# mpiexec.mpich's banner around a rank that died says nothing its next line does not
HYDRA_NOISE = re.compile(r'^=|^This typically refers to a problem with your application|'
                         r'^Please see the FAQ page')
WRAPPER_FAIL = re.compile(r'^mana-(launch|restart)-mpiexec: FAIL: ')


def first_error(output, account=None):
    """The test's first line of output that is not a success line (nor mpiexec's banner),
    followed by the wrapper's FAIL line when it said more."""
    first = next((line.strip() for line in output
                  if line.strip() and not OK_LINE.match(line) and not HYDRA_NOISE.match(line)),
                 None)
    wrapper = next((line.strip() for line in output if WRAPPER_FAIL.match(line)), None)
    if first is None:
        if account:
            return '(no error output) ' + account
        return '(no error output: nonzero exit status or killed)'
    if wrapper and wrapper != first:
        return '%s | %s' % (first, wrapper)
    return first


def read_state(state, kind):
    values = {}
    d = os.path.join(state, kind)
    if os.path.isdir(d):
        for name in os.listdir(d):
            if len(name) != 40:
                continue
            with open(os.path.join(d, name), errors='replace') as f:
                parts = f.readline().rstrip('\n').split('\t')
            if len(parts) >= 2:
                values[parts[0]] = parts[1:]
    return values


def write_state(state, kind, key, fields):
    d = os.path.join(state, kind)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, sha1(key))
    tmp = '%s.%d' % (path, os.getpid())
    with open(tmp, 'w') as f:
        f.write('\t'.join([key] + fields) + '\n')
    os.replace(tmp, path)


def cmd_record_native(a):
    tests = read_manifest(a.manifest)
    results = parse_junit(a.junit)
    for key, (status, output, secs) in results.items():
        if key in tests and status in ('pass', 'fail'):
            why = '' if status == 'pass' else first_error(output)
            # a native run killed by its time limit may say more about the machine's load
            # than about the test: kept apart as 'timeout' (the report says so)
            if status == 'fail' and any(TIMED_OUT.search(line) for line in output):
                status = 'timeout'
            write_state(a.state, 'native', key,
                        [status, why] + (['%.1f' % secs] if secs is not None else []))


def cmd_forget(a):
    """--refresh: the chosen tests' baseline and call counts are measured again."""
    for key in read_manifest(a.manifest):
        for kind in ('native', 'calls'):
            path = os.path.join(a.state, kind, sha1(key))
            if os.path.exists(path):
                os.unlink(path)


def cmd_keys(a):
    tests = read_manifest(a.manifest)
    native = read_state(a.state, 'native')
    for key, t in tests.items():
        if t['xfail']:
            continue
        if a.native_pass and native.get(key, [''])[0] == 'pass':
            print(key)
        if a.native_missing and key not in native:
            print(key)


def account(logdir, key):
    if not logdir:
        return None
    path = os.path.join(logdir, sha1(key))
    if not os.path.isfile(path):
        return None
    with open(path, errors='replace') as f:
        parts = f.readline().rstrip('\n').split('\t', 1)
    return parts[1] if len(parts) == 2 else None


def normalise(line):
    """The shape of an error line, to group failures by apparent cause: the wrapper's
    particulars (which call, which exit status), addresses and numbers left out."""
    line = re.sub(r' \((rank 0 was to ask|checkpoint) at MPI call [^)]*\)', '', line)
    line = re.sub(r'; the run ended with exit \d+', '', line)
    line = re.sub(r', error stack:', '', line)
    line = re.sub(r'0x[0-9a-fA-F]+', 'X', line)
    line = re.sub(r'\[[^\]]*\]', '[]', line)
    line = re.sub(r'\d+', 'N', line)
    return line[:200]


def cmd_report(a):
    tests = read_manifest(a.manifest)
    native = read_state(a.state, 'native')
    modes = []  # (name, results, logdir)
    for spec in a.mode:
        name, _, rest = spec.partition('=')
        junit, _, logdir = rest.partition(',')
        modes.append((name, parse_junit(junit), logdir or None))

    runnable = [k for k, t in tests.items() if not t['xfail']]
    xfail = len(tests) - len(runnable)
    npass = [k for k in runnable if native.get(k, [''])[0] == 'pass']
    dirs = list(OrderedDict((tests[k]['dir'], True) for k in tests))

    # per-mode outcome of every natively passing test
    outcome = {}
    failures = defaultdict(list)
    for name, results, logdir in modes:
        for k in npass:
            status, output, _ = results.get(k, ('missing', [], None))
            outcome[(name, k)] = status
            if status != 'pass':
                why = first_error(output, account(logdir, k)) if status == 'fail' else \
                    'not run (runtests stopped before it, or it is not in this run)'
                failures[name].append((k, why))

    header = ['dir', 'tests', 'native'] + [m[0] for m in modes]
    rows = []
    for d in dirs + ['total']:
        ks = [k for k in runnable if d == 'total' or tests[k]['dir'] == d]
        ok = [k for k in ks if k in npass]
        known = [k for k in ks if k in native]
        row = [d, str(len(ks)), '%d/%d' % (len(ok), len(known)) if len(known) != len(ks)
               else str(len(ok))]
        for name, _, _ in modes:
            row.append('%d/%d' % (sum(outcome[(name, k)] == 'pass' for k in ok), len(ok)))
        rows.append(row)
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    out = []
    out.append('  '.join(h.ljust(w) if i == 0 else h.rjust(w)
                         for i, (h, w) in enumerate(zip(header, widths))))
    for r in rows:
        out.append('  '.join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))))
    out.append('')
    out.append('tests: the lines of the test lists that runtests runs (%d more are xfail and '
               'skipped by runtests); native: passing natively (cached baseline); every other '
               'column: passing under mana out of the tests that pass natively' % xfail)

    parts = ['native %d/%d' % (len(npass), len(runnable))]
    launch_ok = True
    restart_pass = restart_total = 0
    restart_seeds = 0
    for name, _, _ in modes:
        if name == 'native':
            continue
        good = sum(outcome[(name, k)] == 'pass' for k in npass)
        if name == 'launch' or name.startswith('abort'):
            # an aborted checkpoint must leave every test as if none had been asked for
            parts.append('%s %d/%d (%s)' % (name, good, len(npass), pct(good, len(npass))))
            launch_ok = launch_ok and good == len(npass)
        elif name.startswith('restart'):
            restart_pass += good
            restart_total += len(npass)
            restart_seeds += 1
    restart_ok = True
    if restart_seeds:
        parts.append('restart %d seed%s %d/%d (%s)' % (
            restart_seeds, '' if restart_seeds == 1 else 's', restart_pass, restart_total,
            pct(restart_pass, restart_total)))
        restart_ok = restart_total == 0 or 100.0 * restart_pass / restart_total >= a.min_restart_pass - 1e-9
    summary = 'mpich-suite: ' + ', '.join(parts)

    nfail = [k for k in runnable if native.get(k, [''])[0] in ('fail', 'timeout')]
    if nfail:
        out.append('')
        out.append('failing natively, so not run under mana (%d):' % len(nfail))
        for k in nfail:
            out.append('  %s: %s%s' % (k, '(timed out) ' if native[k][0] == 'timeout' else '',
                                        native[k][1] if len(native[k]) > 1 else ''))
        if any(native[k][0] == 'timeout' for k in nfail):
            out.append('  (a test that timed out natively may pass on a less loaded machine: '
                       '--modes native or --refresh runs it again)')
    for name, _, _ in modes:
        if not failures[name]:
            continue
        out.append('')
        out.append('passing natively, failing in %s (%d):' % (name, len(failures[name])))
        for k, why in failures[name]:
            out.append('  %s: %s' % (k, why))
        groups = defaultdict(list)
        for k, why in failures[name]:
            groups[normalise(why)].append(k)
        out.append('  by first error line (%d kinds):' % len(groups))
        for shape, ks in sorted(groups.items(), key=lambda g: -len(g[1])):
            out.append('    %3d  %s' % (len(ks), shape))
    out.append('')
    verdict = []
    if not launch_ok:
        verdict.append('launch or abort mode fails tests that pass natively')
    if not restart_ok:
        verdict.append('restart mode passes %s, under the threshold of %g%%' % (
            pct(restart_pass, restart_total), a.min_restart_pass))
    out.append(summary)
    if verdict:
        out.append('mpich-suite: FAIL: ' + '; '.join(verdict))
    text = '\n'.join(out) + '\n'
    sys.stdout.write(text)
    if a.out:
        with open(a.out, 'w') as f:
            f.write(text)
    return 1 if verdict else 0


def pct(a, b):
    return '%.1f%%' % (100.0 * a / b) if b else 'n/a'


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('select')
    s.add_argument('--tree', required=True)
    s.add_argument('--dirs', required=True)
    s.add_argument('--maxnp', type=int, required=True)
    s.add_argument('--regex')
    s.add_argument('--list')
    s.add_argument('--out', required=True)
    s = sub.add_parser('lists')
    s.add_argument('--tree', required=True)
    s.add_argument('--manifest', required=True)
    s.add_argument('--maxnp', type=int, required=True)
    s.add_argument('--name', required=True)
    s.add_argument('--keys')
    s.add_argument('--state')
    s.add_argument('--native-scale', type=float, default=0.0)
    s.add_argument('--multiplier', type=float, default=1.0)
    s.add_argument('--base-timeout', type=float, default=180.0)
    s = sub.add_parser('programs')
    s.add_argument('--manifest', required=True)
    s.add_argument('--keys')
    s = sub.add_parser('record-native')
    s.add_argument('--manifest', required=True)
    s.add_argument('--junit', required=True)
    s.add_argument('--state', required=True)
    s = sub.add_parser('forget')
    s.add_argument('--manifest', required=True)
    s.add_argument('--state', required=True)
    s = sub.add_parser('keys')
    s.add_argument('--manifest', required=True)
    s.add_argument('--state', required=True)
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument('--native-pass', action='store_true')
    g.add_argument('--native-missing', action='store_true')
    s = sub.add_parser('report')
    s.add_argument('--manifest', required=True)
    s.add_argument('--state', required=True)
    s.add_argument('--mode', action='append', default=[])
    s.add_argument('--min-restart-pass', type=float, default=98.0)
    s.add_argument('--out')
    a = p.parse_args()
    handler = {'select': cmd_select, 'lists': cmd_lists, 'programs': cmd_programs,
               'record-native': cmd_record_native, 'forget': cmd_forget, 'keys': cmd_keys, 'report': cmd_report}
    sys.exit(handler[a.cmd](a) or 0)


if __name__ == '__main__':
    main()
