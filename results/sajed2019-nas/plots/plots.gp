# ldpb sim --preset sajed2019-nas: the figures of docs/sim.md

# dp-nas-by-gap
reset
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-nas-by-gap.png'
set logscale xy
set grid
set key outside right top
set format y '10^{%L}'
set xlabel 'gap {/Symbol D} = E X (X in \{-1, +1\})'
set ylabel 'samples to stop (mean, 95% interval)'
set title "dp-nas (Sajed and Sheffet 2019, Alg. 1): samples to stop, 1000 trials,\n{/Symbol a} = 0.5, {/Symbol b} = 0.05; dashed: 37.9 (t_0 + t_1 + t_2) of Thm 3.3"
plot \
  'data/dp-nas-by-gap.dat' index 0 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#0d0887' title '{/Symbol e} = 0.1', \
  'data/dp-nas-by-gap.dat' index 0 using 1:5 with lines dt 2 lw 1.5 lc rgb '#0d0887' notitle, \
  'data/dp-nas-by-gap.dat' index 1 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#5c01a6' title '{/Symbol e} = 0.25', \
  'data/dp-nas-by-gap.dat' index 1 using 1:5 with lines dt 2 lw 1.5 lc rgb '#5c01a6' notitle, \
  'data/dp-nas-by-gap.dat' index 2 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#cc4778' title '{/Symbol e} = 0.5', \
  'data/dp-nas-by-gap.dat' index 2 using 1:5 with lines dt 2 lw 1.5 lc rgb '#cc4778' notitle, \
  'data/dp-nas-by-gap.dat' index 3 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#f0a100' title '{/Symbol e} = 1', \
  'data/dp-nas-by-gap.dat' index 3 using 1:5 with lines dt 2 lw 1.5 lc rgb '#f0a100' notitle
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-nas-by-gap.svg'
replot
unset output

# dp-nas-by-eps
reset
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-nas-by-eps.png'
set logscale xy
set grid
set key outside right top
set format y '10^{%L}'
set xlabel '{/Symbol e}'
set ylabel 'samples to stop (mean, 95% interval)'
set title "dp-nas (Sajed and Sheffet 2019, Alg. 1): samples to stop, 1000 trials,\n{/Symbol a} = 0.5, {/Symbol b} = 0.05; dashed: 37.9 (t_0 + t_1 + t_2) of Thm 3.3"
plot \
  'data/dp-nas-by-eps.dat' index 0 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#0d0887' title '{/Symbol D} = 0.05', \
  'data/dp-nas-by-eps.dat' index 0 using 1:5 with lines dt 2 lw 1.5 lc rgb '#0d0887' notitle, \
  'data/dp-nas-by-eps.dat' index 1 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#5c01a6' title '{/Symbol D} = 0.1', \
  'data/dp-nas-by-eps.dat' index 1 using 1:5 with lines dt 2 lw 1.5 lc rgb '#5c01a6' notitle, \
  'data/dp-nas-by-eps.dat' index 2 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#9c179e' title '{/Symbol D} = 0.2', \
  'data/dp-nas-by-eps.dat' index 2 using 1:5 with lines dt 2 lw 1.5 lc rgb '#9c179e' notitle, \
  'data/dp-nas-by-eps.dat' index 3 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#cc4778' title '{/Symbol D} = 0.4', \
  'data/dp-nas-by-eps.dat' index 3 using 1:5 with lines dt 2 lw 1.5 lc rgb '#cc4778' notitle, \
  'data/dp-nas-by-eps.dat' index 4 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#f0a100' title '{/Symbol D} = 0.8', \
  'data/dp-nas-by-eps.dat' index 4 using 1:5 with lines dt 2 lw 1.5 lc rgb '#f0a100' notitle
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-nas-by-eps.svg'
replot
unset output

# dp-exp-nas-by-gap
reset
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-exp-nas-by-gap.png'
set logscale xy
set grid
set key outside right top
set format y '10^{%L}'
set xlabel 'gap {/Symbol D} = E X (X in \{-1, +1\})'
set ylabel 'samples to stop (mean, 95% interval)'
set title "dp-exp-nas (Sajed and Sheffet 2019, Alg. 2): samples to stop, 1000 trials,\n{/Symbol a} = 0.5, {/Symbol b} = 0.05; dashed: 27.8 (t_0 + t_1 + t_2) of Thm 3.3"
plot \
  'data/dp-exp-nas-by-gap.dat' index 0 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#0d0887' title '{/Symbol e} = 0.1', \
  'data/dp-exp-nas-by-gap.dat' index 0 using 1:5 with lines dt 2 lw 1.5 lc rgb '#0d0887' notitle, \
  'data/dp-exp-nas-by-gap.dat' index 1 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#5c01a6' title '{/Symbol e} = 0.25', \
  'data/dp-exp-nas-by-gap.dat' index 1 using 1:5 with lines dt 2 lw 1.5 lc rgb '#5c01a6' notitle, \
  'data/dp-exp-nas-by-gap.dat' index 2 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#cc4778' title '{/Symbol e} = 0.5', \
  'data/dp-exp-nas-by-gap.dat' index 2 using 1:5 with lines dt 2 lw 1.5 lc rgb '#cc4778' notitle, \
  'data/dp-exp-nas-by-gap.dat' index 3 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#f0a100' title '{/Symbol e} = 1', \
  'data/dp-exp-nas-by-gap.dat' index 3 using 1:5 with lines dt 2 lw 1.5 lc rgb '#f0a100' notitle
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-exp-nas-by-gap.svg'
replot
unset output

# dp-exp-nas-by-eps
reset
set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-exp-nas-by-eps.png'
set logscale xy
set grid
set key outside right top
set format y '10^{%L}'
set xlabel '{/Symbol e}'
set ylabel 'samples to stop (mean, 95% interval)'
set title "dp-exp-nas (Sajed and Sheffet 2019, Alg. 2): samples to stop, 1000 trials,\n{/Symbol a} = 0.5, {/Symbol b} = 0.05; dashed: 27.8 (t_0 + t_1 + t_2) of Thm 3.3"
plot \
  'data/dp-exp-nas-by-eps.dat' index 0 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#0d0887' title '{/Symbol D} = 0.05', \
  'data/dp-exp-nas-by-eps.dat' index 0 using 1:5 with lines dt 2 lw 1.5 lc rgb '#0d0887' notitle, \
  'data/dp-exp-nas-by-eps.dat' index 1 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#5c01a6' title '{/Symbol D} = 0.1', \
  'data/dp-exp-nas-by-eps.dat' index 1 using 1:5 with lines dt 2 lw 1.5 lc rgb '#5c01a6' notitle, \
  'data/dp-exp-nas-by-eps.dat' index 2 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#9c179e' title '{/Symbol D} = 0.2', \
  'data/dp-exp-nas-by-eps.dat' index 2 using 1:5 with lines dt 2 lw 1.5 lc rgb '#9c179e' notitle, \
  'data/dp-exp-nas-by-eps.dat' index 3 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#cc4778' title '{/Symbol D} = 0.4', \
  'data/dp-exp-nas-by-eps.dat' index 3 using 1:5 with lines dt 2 lw 1.5 lc rgb '#cc4778' notitle, \
  'data/dp-exp-nas-by-eps.dat' index 4 using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '#f0a100' title '{/Symbol D} = 0.8', \
  'data/dp-exp-nas-by-eps.dat' index 4 using 1:5 with lines dt 2 lw 1.5 lc rgb '#f0a100' notitle
unset output
set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 background rgb 'white'
set output 'dp-exp-nas-by-eps.svg'
replot
unset output
