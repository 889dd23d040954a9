# Helpers shared by the benchmark scripts (sourced).

# The median of the numbers on stdin, printed with FORMAT (default %g).
median() {
	sort -n | awk -v f="${1:-%g}" '{a[NR]=$1}
	    END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf f, m}'
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
