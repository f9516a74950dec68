# ldpb sim --preset shariff2018: regret of LinUCB, JDP LinUCB and the local mode, one figure per gap.
# Render: gnuplot plots.gp
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' background rgb 'white'
set output 'shariff2018-gap0.1.png'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [1:50000000]
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title 'Shariff and Sheffet 2018: d = 5, 25 actions/round, gap 0.1, n = 5e7, 35 runs, {/Symbol d} = 0.1'
set key top left box opaque
set grid
set style fill transparent solid 0.16 noborder
plot \
  'data/c0.dat' using 1:3:4 with filledcurves lc rgb '#000000' notitle, \
  'data/c0.dat' using 1:2 with lines lw 2 lc rgb '#000000' title 'linucb', \
  'data/c1.dat' using 1:3:4 with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c1.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'jdp-linucb-wishart, {/Symbol e} = 1', \
  'data/c2.dat' using 1:3:4 with filledcurves lc rgb '#d62728' notitle, \
  'data/c2.dat' using 1:2 with lines lw 2 lc rgb '#d62728' title 'jdp-linucb-gaussian, {/Symbol e} = 1'
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' background rgb 'white'
set output 'shariff2018-gap0.1.svg'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [1:50000000]
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title 'Shariff and Sheffet 2018: d = 5, 25 actions/round, gap 0.1, n = 5e7, 35 runs, {/Symbol d} = 0.1'
set key top left box opaque
set grid
set style fill transparent solid 0.16 noborder
plot \
  'data/c0.dat' using 1:3:4 with filledcurves lc rgb '#000000' notitle, \
  'data/c0.dat' using 1:2 with lines lw 2 lc rgb '#000000' title 'linucb', \
  'data/c1.dat' using 1:3:4 with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c1.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'jdp-linucb-wishart, {/Symbol e} = 1', \
  'data/c2.dat' using 1:3:4 with filledcurves lc rgb '#d62728' notitle, \
  'data/c2.dat' using 1:2 with lines lw 2 lc rgb '#d62728' title 'jdp-linucb-gaussian, {/Symbol e} = 1'
unset output
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' background rgb 'white'
set output 'shariff2018-gap0.png'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [1:50000000]
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title 'Shariff and Sheffet 2018: d = 5, 25 actions/round, gap 0, n = 5e7, 35 runs, {/Symbol d} = 0.1'
set key top left box opaque
set grid
set style fill transparent solid 0.16 noborder
plot \
  'data/c3.dat' using 1:3:4 with filledcurves lc rgb '#000000' notitle, \
  'data/c3.dat' using 1:2 with lines lw 2 lc rgb '#000000' title 'linucb', \
  'data/c4.dat' using 1:3:4 with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c4.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'jdp-linucb-wishart, {/Symbol e} = 1', \
  'data/c5.dat' using 1:3:4 with filledcurves lc rgb '#d62728' notitle, \
  'data/c5.dat' using 1:2 with lines lw 2 lc rgb '#d62728' title 'jdp-linucb-gaussian, {/Symbol e} = 1'
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' background rgb 'white'
set output 'shariff2018-gap0.svg'
set logscale xy
set format x '10^{%L}'
set format y '10^{%L}'
set xrange [1:50000000]
set xlabel 'round t'
set ylabel 'cumulative pseudo-regret'
set title 'Shariff and Sheffet 2018: d = 5, 25 actions/round, gap 0, n = 5e7, 35 runs, {/Symbol d} = 0.1'
set key top left box opaque
set grid
set style fill transparent solid 0.16 noborder
plot \
  'data/c3.dat' using 1:3:4 with filledcurves lc rgb '#000000' notitle, \
  'data/c3.dat' using 1:2 with lines lw 2 lc rgb '#000000' title 'linucb', \
  'data/c4.dat' using 1:3:4 with filledcurves lc rgb '#1f77b4' notitle, \
  'data/c4.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'jdp-linucb-wishart, {/Symbol e} = 1', \
  'data/c5.dat' using 1:3:4 with filledcurves lc rgb '#d62728' notitle, \
  'data/c5.dat' using 1:2 with lines lw 2 lc rgb '#d62728' title 'jdp-linucb-gaussian, {/Symbol e} = 1'
unset output
