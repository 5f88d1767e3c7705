# bench/parload.gp: plots bench/parload.sh's results.
# gnuplot -e "datafile='parload.dat'; outfile='parload.png'" parload.gp
# Columns: label threads MB/s avg_runs worst_runs excess/file noncontig%
set terminal pngcairo size 1200,500 font ",10"
set output outfile
set multiplot layout 1,2 title "ext3 image, one 4 KiB-append stream per thread"
set logscale x 2
set xlabel "threads"
set key top left
set grid

set ylabel "MB/s"
set yrange [0:*]
plot for [m in "none list rbtree kernel"] datafile using 2:(strcol(1) eq m ? $3 : NaN) \
	with linespoints title m

set ylabel "runs per file (average, e2fsck order)"
set logscale y
set yrange [0.8:*]
plot for [m in "none list rbtree kernel"] datafile using 2:(strcol(1) eq m ? $4 : NaN) \
	with linespoints title m, \
     datafile using 2:(strcol(1) eq "rbtree+hint" ? $4 : NaN) with points pt 7 ps 1.5 title "rbtree + hint"
unset multiplot
