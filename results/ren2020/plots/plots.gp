# Figures of `ldpb sim` (docs/sim.md). Run from this directory:
#   gnuplot plots.gp
# Data: data/c<N>.dat, configuration N of summary.csv (0-based row), columns t mean ci95_low ci95_high.

# figure 1: ren2020-mixed-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps0.5.png'
set logscale xy
set xrange [1:100000]
set yrange [1:29573.6]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-mixed: 20 arms, mixed laws (RZLS20 'Mixed')\nevery algorithm at ε = 0.5;  T = 1e5,  100 trials" noenhanced
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
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c4.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 0.5"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps0.5.svg'
replot
unset output

# figure 2: ren2020-mixed-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps1.png'
set logscale xy
set xrange [1:100000]
set yrange [1:23929]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-mixed: 20 arms, mixed laws (RZLS20 'Mixed')\nevery algorithm at ε = 1;  T = 1e5,  100 trials" noenhanced
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
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps1.svg'
replot
unset output

# figure 3: ren2020-mixed-eps2
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps2.png'
set logscale xy
set xrange [1:100000]
set yrange [1:16202.8]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-mixed: 20 arms, mixed laws (RZLS20 'Mixed')\nevery algorithm at ε = 2;  T = 1e5,  100 trials" noenhanced
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
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-eps2.svg'
replot
unset output

# figure 4: ren2020-mixed-ldp-ucb-b-linear
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-ldp-ucb-b-linear.png'
set logscale xy
set xrange [1:100000]
set yrange [1:21431.6]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-mixed: 20 arms, mixed laws (RZLS20 'Mixed')\nldp-ucb-b, linear across ε;  T = 1e5,  100 trials" noenhanced
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
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 5 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 9 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 11 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-ldp-ucb-b-linear.svg'
replot
unset output

# figure 5: ren2020-mixed-ldp-ucb-l-laplace
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-ldp-ucb-l-laplace.png'
set logscale xy
set xrange [1:100000]
set yrange [1:29573.6]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-mixed: 20 arms, mixed laws (RZLS20 'Mixed')\nldp-ucb-l, laplace across ε;  T = 1e5,  100 trials" noenhanced
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
  'data/c4.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c0.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 5 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 9 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 11 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 101.6666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a ln t / Δ_a", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-mixed-ldp-ucb-l-laplace.svg'
replot
unset output

# figure 6: ren2020-bern-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps0.5.png'
set logscale xy
set xrange [1:100000]
set yrange [1:29448.2]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-bern: 20 Bernoulli arms (RZLS20 'Bern')\nevery algorithm at ε = 0.5;  T = 1e5,  100 trials" noenhanced
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
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 25.71985781 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 0.5"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps0.5.svg'
replot
unset output

# figure 7: ren2020-bern-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps1.png'
set logscale xy
set xrange [1:100000]
set yrange [1:23905.8]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-bern: 20 Bernoulli arms (RZLS20 'Bern')\nevery algorithm at ε = 1;  T = 1e5,  100 trials" noenhanced
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
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 25.71985781 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps1.svg'
replot
unset output

# figure 8: ren2020-bern-eps2
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps2.png'
set logscale xy
set xrange [1:100000]
set yrange [1:16105.8]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-bern: 20 Bernoulli arms (RZLS20 'Bern')\nevery algorithm at ε = 2;  T = 1e5,  100 trials" noenhanced
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
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 7 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 5 ps 1.1 pi 10 title "ldp-ucb-b, linear" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 9 ps 1.1 pi 10 title "ldp-ucb-l, laplace" noenhanced, \
  (x > 1.5 ? 25.71985781 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#8b0000' title "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-eps2.svg'
replot
unset output

# figure 9: ren2020-bern-ldp-ucb-b-linear
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-ldp-ucb-b-linear.png'
set logscale xy
set xrange [1:100000]
set yrange [1:21287.5]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-bern: 20 Bernoulli arms (RZLS20 'Bern')\nldp-ucb-b, linear across ε;  T = 1e5,  100 trials" noenhanced
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
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 5 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 9 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 11 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 25.71985781 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-ldp-ucb-b-linear.svg'
replot
unset output

# figure 10: ren2020-bern-ldp-ucb-l-laplace
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-ldp-ucb-l-laplace.png'
set logscale xy
set xrange [1:100000]
set yrange [1:29448.2]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "ren2020-bern: 20 Bernoulli arms (RZLS20 'Bern')\nldp-ucb-l, laplace across ε;  T = 1e5,  100 trials" noenhanced
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
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#000000' notitle, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 5 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 9 ps 1.1 pi 10 title "ε = 2" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#000000' pt 11 ps 1.1 pi 10 title "ucb1 (non-private)" noenhanced, \
  (x > 1.5 ? 25.71985781 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 88.87258787 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#0d0887' title "LDP shape, ε = 0.5", \
  (x > 1.5 ? 8.608545887 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#cc4778' title "LDP shape, ε = 1", \
  (x > 1.5 ? 0.6226517175 * log(x) : 1/0) with lines dt 4 lw 1.8 lc rgb '#f0a100' title "LDP shape, ε = 2"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'ren2020-bern-ldp-ucb-l-laplace.svg'
replot
unset output
