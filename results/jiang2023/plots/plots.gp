# Figures of `ldpb sim` (docs/sim.md). Run from this directory:
#   gnuplot plots.gp
# Data: data/c<N>.dat, configuration N of summary.csv (0-based row), columns t mean ci95_low ci95_high.

# figure 1: jiang2023-eps0.1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.1.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nevery algorithm at ε = 0.1;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#2ca02c' notitle, \
  'data/c15.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#d62728' notitle, \
  'data/c20.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9467bd' notitle, \
  'data/c25.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#8c564b' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "ldp-ts-b, linear" noenhanced, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "ldp-ts-b, quadratic" noenhanced, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#2ca02c' pt 9 ps 1.1 pi 10 title "ldp-ts-b, exponential" noenhanced, \
  'data/c15.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#d62728' pt 11 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c20.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9467bd' pt 13 ps 1.1 pi 10 title "ldp-ucb-b, quadratic" noenhanced, \
  'data/c25.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#8c564b' pt 15 ps 1.1 pi 10 title "ldp-ucb-b, exponential" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 4 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 6 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 0.1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.1.svg'
replot
unset output

# figure 2: jiang2023-eps0.25
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.25.png'
set logscale xy
set xrange [1:100000]
set yrange [1:28765.2]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nevery algorithm at ε = 0.25;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#2ca02c' notitle, \
  'data/c16.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#d62728' notitle, \
  'data/c21.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9467bd' notitle, \
  'data/c26.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#8c564b' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "ldp-ts-b, linear" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "ldp-ts-b, quadratic" noenhanced, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#2ca02c' pt 9 ps 1.1 pi 10 title "ldp-ts-b, exponential" noenhanced, \
  'data/c16.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#d62728' pt 11 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c21.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9467bd' pt 13 ps 1.1 pi 10 title "ldp-ucb-b, quadratic" noenhanced, \
  'data/c26.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#8c564b' pt 15 ps 1.1 pi 10 title "ldp-ucb-b, exponential" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 4 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 6 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 0.25"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.25.svg'
replot
unset output

# figure 3: jiang2023-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.5.png'
set logscale xy
set xrange [1:100000]
set yrange [1:21536.6]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nevery algorithm at ε = 0.5;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#2ca02c' notitle, \
  'data/c17.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#d62728' notitle, \
  'data/c22.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9467bd' notitle, \
  'data/c27.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#8c564b' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "ldp-ts-b, linear" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "ldp-ts-b, quadratic" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#2ca02c' pt 9 ps 1.1 pi 10 title "ldp-ts-b, exponential" noenhanced, \
  'data/c17.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#d62728' pt 11 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c22.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9467bd' pt 13 ps 1.1 pi 10 title "ldp-ucb-b, quadratic" noenhanced, \
  'data/c27.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#8c564b' pt 15 ps 1.1 pi 10 title "ldp-ucb-b, exponential" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 4 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 6 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 0.5"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps0.5.svg'
replot
unset output

# figure 4: jiang2023-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps1.png'
set logscale xy
set xrange [1:100000]
set yrange [1:10946.2]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nevery algorithm at ε = 1;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#2ca02c' notitle, \
  'data/c18.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#d62728' notitle, \
  'data/c23.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9467bd' notitle, \
  'data/c28.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#8c564b' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "ldp-ts-b, linear" noenhanced, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "ldp-ts-b, quadratic" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#2ca02c' pt 9 ps 1.1 pi 10 title "ldp-ts-b, exponential" noenhanced, \
  'data/c18.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#d62728' pt 11 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c23.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9467bd' pt 13 ps 1.1 pi 10 title "ldp-ucb-b, quadratic" noenhanced, \
  'data/c28.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#8c564b' pt 15 ps 1.1 pi 10 title "ldp-ucb-b, exponential" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 4 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 6 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps1.svg'
replot
unset output

# figure 5: jiang2023-eps2
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps2.png'
set logscale xy
set xrange [1:100000]
set yrange [1:4972.71]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nevery algorithm at ε = 2;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c4.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c14.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#2ca02c' notitle, \
  'data/c19.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#d62728' notitle, \
  'data/c24.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9467bd' notitle, \
  'data/c29.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#8c564b' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "ldp-ts-b, linear" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "ldp-ts-b, quadratic" noenhanced, \
  'data/c14.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#2ca02c' pt 9 ps 1.1 pi 10 title "ldp-ts-b, exponential" noenhanced, \
  'data/c19.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#d62728' pt 11 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c24.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9467bd' pt 13 ps 1.1 pi 10 title "ldp-ucb-b, quadratic" noenhanced, \
  'data/c29.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#8c564b' pt 15 ps 1.1 pi 10 title "ldp-ucb-b, exponential" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 4 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 6 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-eps2.svg'
replot
unset output

# figure 6: jiang2023-ldp-ts-b-linear
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-linear.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ts-b, linear across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c4.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-linear.svg'
replot
unset output

# figure 7: jiang2023-ldp-ts-b-quadratic
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-quadratic.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ts-b, quadratic across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-quadratic.svg'
replot
unset output

# figure 8: jiang2023-ldp-ts-b-exponential
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-exponential.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ts-b, exponential across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c14.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c14.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ts-b-exponential.svg'
replot
unset output

# figure 9: jiang2023-ldp-ucb-b-linear
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-linear.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ucb-b, linear across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c15.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c16.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c17.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c18.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c19.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c15.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c16.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c17.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c18.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c19.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-linear.svg'
replot
unset output

# figure 10: jiang2023-ldp-ucb-b-quadratic
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-quadratic.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ucb-b, quadratic across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c20.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c21.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c22.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c23.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c24.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c20.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c21.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c22.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c23.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c24.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-quadratic.svg'
replot
unset output

# figure 11: jiang2023-ldp-ucb-b-exponential
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-exponential.png'
set logscale xy
set xrange [1:100000]
set yrange [1:64000]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "jiang2023: 20 arms, mixed laws (JZL23 / RZLS20 instance)\nldp-ucb-b, exponential across ε;  T = 1e5,  50 trials" noenhanced
set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw 1
set mxtics 10
set mytics 10
set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1
set style fill transparent solid 0.16 noborder
set samples 300
set pointintervalbox 0.01
set bmargin 5
set label 1 'bands: 95% CI of the mean;  broken lines: lower-bound shapes (docs/derivations.md 13), reference only' at screen 0.985, screen 0.018 right font ',9' tc rgb '#555555' noenhanced
plot \
  'data/c25.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c26.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#5c01a6' notitle, \
  'data/c27.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c28.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ed7953' notitle, \
  'data/c29.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#555555' notitle, \
  'data/c25.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c26.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#5c01a6' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c27.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c28.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ed7953' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c29.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 13 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 15 ps 1.1 pi 10 title "ts (non-private)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#555555' pt 4 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 7525.378671 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.1", \
  (x > 1.5 ? 764.3934067 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#5c01a6' title "LDP shape, ε = 0.25", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#ed7953' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'jiang2023-ldp-ucb-b-exponential.svg'
replot
unset output
