# Figures of `ldpb sim` (docs/sim.md). Run from this directory:
#   gnuplot plots.gp
# Data: data/c<N>.dat, configuration N of summary.csv (0-based row), columns t mean ci95_low ci95_high.

# figure 1: sajed2019-c3-k3-eps0.1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:855616]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c4.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.1 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.1", \
  (x > 1.5 ? 4.766666667 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.1.svg'
replot
unset output

# figure 2: sajed2019-c3-k3-eps0.25
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.25.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:348815]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 4.706666667 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.25.svg'
replot
unset output

# figure 3: sajed2019-c3-k3-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.5.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:177270]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 4.686666667 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps0.5.svg'
replot
unset output

# figure 4: sajed2019-c3-k3-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:90334.5]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 4.676666667 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-eps1.svg'
replot
unset output

# figure 5: sajed2019-c3-k3-dp-se
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-dp-se.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:4529]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-se (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c1.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.1 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-dp-se.svg'
replot
unset output

# figure 6: sajed2019-c3-k3-dp-ucb
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-dp-ucb.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:855616]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 3 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-ucb (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c5.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 2.109274187 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.1 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k3-dp-ucb.svg'
replot
unset output

# figure 7: sajed2019-c3-dp-se-eps0.1-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.1-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:59954.8]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-se (central) at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c16.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c24.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c0.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c16.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c24.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.766666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.57142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.4059727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.78013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.1-ksweep.svg'
replot
unset output

# figure 8: sajed2019-c3-dp-se-eps0.25-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.25-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:41439.2]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-se (central) at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c17.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c25.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c1.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c17.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c25.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.706666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.45142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.1359727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.21013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.25-ksweep.svg'
replot
unset output

# figure 9: sajed2019-c3-dp-se-eps0.5-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.5-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:39833.4]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-se (central) at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c2.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c18.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c26.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c2.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c18.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c26.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.686666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.41142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.0459727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.02013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps0.5-ksweep.svg'
replot
unset output

# figure 10: sajed2019-c3-dp-se-eps1-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps1-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:38597.9]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-se (central) at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c3.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c19.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c27.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c3.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c19.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c27.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.676666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.39142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.0009727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 80.92513825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-se-eps1-ksweep.svg'
replot
unset output

# figure 11: sajed2019-c3-dp-ucb-eps0.1-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.1-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:8.29485e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-ucb (central) at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c20.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c28.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c4.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c20.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c28.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.766666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.57142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.4059727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.78013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.1-ksweep.svg'
replot
unset output

# figure 12: sajed2019-c3-dp-ucb-eps0.25-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.25-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:3.46317e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-ucb (central) at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c21.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c29.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c5.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c21.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c29.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.706666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.45142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.1359727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.21013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.25-ksweep.svg'
replot
unset output

# figure 13: sajed2019-c3-dp-ucb-eps0.5-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.5-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:1.76984e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-ucb (central) at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c6.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c14.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c22.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c6.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c14.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c22.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.686666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.41142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.0459727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 81.02013825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps0.5-ksweep.svg'
replot
unset output

# figure 14: sajed2019-c3-dp-ucb-eps1-ksweep
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps1-ksweep.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:906680]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: C3: convex quadratic (large gaps) across K\ndp-ucb (central) at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c7.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c15.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c23.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c7.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "K = 3" noenhanced, \
  'data/c15.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "K = 5" noenhanced, \
  'data/c23.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "K = 10" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "K = 20" noenhanced, \
  (x > 1.5 ? 4.676666667 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#0d0887' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 3", \
  (x > 1.5 ? 11.39142857 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#9c179e' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 5", \
  (x > 1.5 ? 32.0009727 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#cc4778' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 10", \
  (x > 1.5 ? 80.92513825 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#f0a100' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a, K = 20"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-dp-ucb-eps1-ksweep.svg'
replot
unset output

# figure 15: sajed2019-c3-k5-eps0.1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:1.72781e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c8.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.2 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.1", \
  (x > 1.5 ? 11.57142857 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.1.svg'
replot
unset output

# figure 16: sajed2019-c3-k5-eps0.25
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.25.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:707008]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.08 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.25", \
  (x > 1.5 ? 11.45142857 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.25.svg'
replot
unset output

# figure 17: sajed2019-c3-k5-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.5.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:359340]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c14.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c14.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 11.41142857 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps0.5.svg'
replot
unset output

# figure 18: sajed2019-c3-k5-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:183528]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c15.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c15.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 11.39142857 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-eps1.svg'
replot
unset output

# figure 19: sajed2019-c3-k5-dp-se
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-dp-se.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:12269.6]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-se (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c9.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c10.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c11.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c8.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c9.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c10.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c11.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.2 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.08 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-dp-se.svg'
replot
unset output

# figure 20: sajed2019-c3-k5-dp-ucb
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-dp-ucb.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:1.72781e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 5 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-ucb (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c12.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c13.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c14.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c15.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c12.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c13.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c14.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c15.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 5.041930832 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.2 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.08 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k5-dp-ucb.svg'
replot
unset output

# figure 21: sajed2019-c3-k10-eps0.1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:3.92974e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c16.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c20.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c16.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c20.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.45 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.1", \
  (x > 1.5 ? 32.4059727 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.1.svg'
replot
unset output

# figure 22: sajed2019-c3-k10-eps0.25
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.25.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:1.61681e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c17.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c21.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c17.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c21.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.18 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.25", \
  (x > 1.5 ? 32.1359727 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.25.svg'
replot
unset output

# figure 23: sajed2019-c3-k10-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.5.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:824242]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c18.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c22.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c18.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c22.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.09 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.5", \
  (x > 1.5 ? 32.0459727 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps0.5.svg'
replot
unset output

# figure 24: sajed2019-c3-k10-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:421408]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c19.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c23.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c19.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c23.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 32.0009727 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-eps1.svg'
replot
unset output

# figure 25: sajed2019-c3-k10-dp-se
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-dp-se.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:26999]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-se (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c16.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c17.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c18.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c19.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c16.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c17.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c18.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c19.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.45 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.18 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25", \
  (x > 1.5 ? 0.09 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#cc4778' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.5"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-dp-se.svg'
replot
unset output

# figure 26: sajed2019-c3-k10-dp-ucb
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-dp-ucb.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:3.92974e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 10 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-ucb (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c21.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c22.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c23.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c20.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c21.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c22.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c23.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 13.82379384 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.45 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.18 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25", \
  (x > 1.5 ? 0.09 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#cc4778' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.5"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k10-dp-ucb.svg'
replot
unset output

# figure 27: sajed2019-c3-k20-eps0.1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:8.29485e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.1;  T = 5e7,  30 trials" noenhanced
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
  'data/c24.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c28.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c24.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c28.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.95 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.1", \
  (x > 1.5 ? 81.78013825 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.1.svg'
replot
unset output

# figure 28: sajed2019-c3-k20-eps0.25
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.25.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:3.46317e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.25;  T = 5e7,  30 trials" noenhanced
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
  'data/c25.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c29.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c25.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c29.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.38 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.25", \
  (x > 1.5 ? 81.21013825 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.25.svg'
replot
unset output

# figure 29: sajed2019-c3-k20-eps0.5
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.5.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:1.76984e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 0.5;  T = 5e7,  30 trials" noenhanced
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
  'data/c26.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c26.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.19 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 0.5", \
  (x > 1.5 ? 81.02013825 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps0.5.svg'
replot
unset output

# figure 30: sajed2019-c3-k20-eps1
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps1.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:906680]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\nevery algorithm at ε = 1;  T = 5e7,  30 trials" noenhanced
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
  'data/c27.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#ff7f0e' notitle, \
  'data/c27.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#1f77b4' pt 7 ps 1.1 pi 10 title "dp-se (central)" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#ff7f0e' pt 5 ps 1.1 pi 10 title "dp-ucb (central)" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.095 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#00008b' title "central-DP shape  (K-1) ln t / (200 ε),  ε = 1", \
  (x > 1.5 ? 80.92513825 * log(x) : 1/0) with lines dt 5 lw 1.8 lc rgb '#006400' title "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-eps1.svg'
replot
unset output

# figure 31: sajed2019-c3-k20-dp-se
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-dp-se.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:59954.8]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-se (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c24.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c25.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c26.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c27.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c24.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c25.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c26.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c27.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.95 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.38 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25", \
  (x > 1.5 ? 0.19 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#cc4778' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.5", \
  (x > 1.5 ? 0.095 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#f0a100' title "central-DP shape (K-1) ln t / (200 ε), ε = 1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-dp-se.svg'
replot
unset output

# figure 32: sajed2019-c3-k20-dp-ucb
reset
set encoding utf8
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-dp-ucb.png'
set logscale xy
set xrange [1:50000000]
set yrange [1:8.29485e+06]
YMIN = 1
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title "sajed2019-c3: K = 20 Bernoulli arms, C3: convex quadratic (large gaps)\ndp-ucb (central) across ε;  T = 5e7,  30 trials" noenhanced
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
  'data/c28.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#0d0887' notitle, \
  'data/c29.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#9c179e' notitle, \
  'data/c30.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#cc4778' notitle, \
  'data/c31.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) with filledcurves lc rgb '#f0a100' notitle, \
  'data/c28.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#0d0887' pt 7 ps 1.1 pi 10 title "ε = 0.1" noenhanced, \
  'data/c29.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#9c179e' pt 5 ps 1.1 pi 10 title "ε = 0.25" noenhanced, \
  'data/c30.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#cc4778' pt 9 ps 1.1 pi 10 title "ε = 0.5" noenhanced, \
  'data/c31.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 lc rgb '#f0a100' pt 11 ps 1.1 pi 10 title "ε = 1" noenhanced, \
  (x > 1.5 ? 34.285302 * log(x) : 1/0) with lines dt 2 lw 1.8 lc rgb '#333333' title "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)", \
  (x > 1.5 ? 0.95 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#0d0887' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.1", \
  (x > 1.5 ? 0.38 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#9c179e' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.25", \
  (x > 1.5 ? 0.19 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#cc4778' title "central-DP shape (K-1) ln t / (200 ε), ε = 0.5", \
  (x > 1.5 ? 0.095 * log(x) : 1/0) with lines dt 3 lw 1.8 lc rgb '#f0a100' title "central-DP shape (K-1) ln t / (200 ε), ε = 1"
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'sajed2019-c3-k20-dp-ucb.svg'
replot
unset output
