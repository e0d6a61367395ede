# normalise.awk - what tests/realapps/hpcc.sh compares of an HPCC 1.5.0 report (hpccoutf.txt).
#
#   awk -f normalise.awk hpccoutf.txt
#
# Every line goes through unchanged, except what depends on the clock, the machine's load or
# the day: those lines are dropped, or the timing columns of a table row are cut away.  Two
# native runs at 2 ranks print the same normalised report (measured: see hpcc.sh).  What stays:
#   - the order of the sections (Begin of ... section / End of ... section);
#   - HPL: the parameter echo, the T/V N NB P Q columns of the result row, the scaled residual
#     ||Ax-b||/(...) and its PASSED/FAILED, the counts of passed and failed tests; in the
#     summary the norms (HPL_RnormI, HPL_Anorm1, HPL_AnormI, HPL_Xnorm1, HPL_XnormI,
#     HPL_BnormI), bit for bit as printed: with the reference BLAS the factorization does the
#     same arithmetic in the same order in every run;
#   - PTRANS: the sizes and grid of each WALL row, CHECK (PASSED/FAILED) and RESID, and the
#     counts; not the CPU rows, which PTRANS prints only when the CPU clock (a coarse one)
#     moved during the transpose: native runs print from 2 to 5 of them;
#   - RandomAccess (MPI, Star, Single, each LCG too): the table sizes, the update counts that
#     do not depend on time, "Found E errors in L locations (passed)", the nodes with errors;
#   - STREAM: array size, memory, repeat count, the "Solution Validates" verdict, the nodes
#     with errors; FFT (MPI, Star, Single): vector sizes and max(|x-x0|), bit for bit;
#   - DGEMM: only the nodes with errors (its matrices are seeded with time(NULL), so the
#     scaled residual differs from run to run);
#   - LatencyBandwidth: the message sizes and the conditions, no measurement (nor whether
#     "MPI_Wtime granularity is ok": that compares a measured latency with the clock's tick);
#   - the summary's key=value lines, less the times and rates (see drop_key below).
# Dropped besides: "Compiled on", "Current time", "Hostname:" and the lines of '#' that frame
# the banner (so that reports split at the banner compare equal), and every time, rate,
# clock estimate and calibrated repeat count.  MPI RandomAccess's "Number of updates EXECUTED"
# is one of those: HPCC times 1% of the updates and cuts the count when the projection
# exceeds 60 s, which a checkpoint that falls inside that sample can legitimately cause.

function drop_key(k) {
  return k ~ /(_time|Time|_time[0-9]+|GUPs|Gflops|Tflops|GBs|_GBytes|_usec|_Copy|_Scale|_Add|_Triad|ExeUpdates|TimeBound)$/
}

/^#+$/ || /^Compiled on / || /^Current time \(/ || /^Hostname: / { next }
/^Begin of .* section\.$/ { section = $3; print; next }
/^End of .* section\.$/ { section = ""; print; next }

section == "Summary" {
  k = $0; sub(/=.*/, "", k)
  if (!drop_key(k)) print
  next
}

# HPL's result row: T/V N NB P Q Time Gflops
/^W[RC][0-9][0-9][RLC][0-9][RLC][0-9]+ / { print $1, $2, $3, $4, $5; next }
# PTRANS's rows: TIME M N MB NB P Q TIME CHECK GB/s RESID
/^WALL +[0-9]+ +[0-9]+ / { print $1, $2, $3, $4, $5, $6, $7, $9, $11; next }
/^CPU +[0-9]+ +[0-9]+ / { next }

/CPU time used|Real time used|GUP\/s|Gflop\/s|GB\/s/ { next }
/^Number of updates EXECUTED/ { next }
/^(Generation time|Tuning|Computing|Inverse FFT):/ { next }
section == "StarDGEMM" && /^Scaled residual:/ { next }
section == "StarSTREAM" && (/^Your clock granularity/ || /^Each test below will take/ ||
                            /^ *\(= [0-9]+ clock ticks\)/ || /^VERBOSE: total setup time/ ||
                            /^(Copy|Scale|Add|Triad): /) { next }
section == "LatencyBandwidth" {
  # only the message sizes and the set-up; every other number was measured
  if (/^Message (Length|Size):/ || /^message size:/ || /^max time :/ ||
      /measurements were done with/ || /communication was done/ || /pairs of processes for/ ||
      /possible combinations/ || (!/[0-9]/ && !/granularity is ok|Use MPI_Wtick/))
    print
  next
}
{ print }
