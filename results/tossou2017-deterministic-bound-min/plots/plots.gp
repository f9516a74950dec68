# Figures of `ldpb sim` (docs/sim.md). Run from this directory:
#   gnuplot plots.gp
# Data: data/c<N>.dat, configuration N of summary.csv (0-based row), columns t mean ci95_low ci95_high.

# figure 1: tossou2017-deterministic-eps6
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'tossou2017-deterministic-eps6.png'
set logscale xy
set xrange [1:262144]
set yrange [1:21931.5]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'regret against the best fixed arm'
set title "tossou2017-deterministic: deterministic adversary: arm 2 pays 1 on even rounds, arm 1 0.38, arm 3 1 on multiples of 3\nevery algorithm at ε = 6;  T = 262144,  720 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean (median of means and GMD: robust.csv)' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "exp3 (non-private)" noenhanced, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "dp-exp3-lap (central)" noenhanced, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 9 ps 1.1 pi 10 title "exp3-tau (non-private)" noenhanced
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'tossou2017-deterministic-eps6.svg'
replot
unset output
