# smith2013-bandit: mean final regret against the horizon T (95% intervals), log-log, with
# the rate T^0.75 of Smith & Thakurta 2013 (dashed, through the eps = 1 point at the largest T).
set logscale xy
set key left top
set grid
set xlabel 'horizon T'
set ylabel 'mean pseudo-regret at T'
set terminal pngcairo size 800,560
set output 'smith2013-bandit-k3.png'
set title 'smith2013-bandit, k = 3, 100 trials'
plot 'data/c0.dat' using 1:2:3:4 with yerrorlines title 'ftal-bandit eps=inf', 'data/c1.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.1', 'data/c2.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.5', 'data/c3.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=1', 'data/c4.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=2', 22465.2*(x/1000000)**0.75 with lines dashtype 2 title 'T^{0.75}'
set terminal svg size 800,560
set output 'smith2013-bandit-k3.svg'
set title 'smith2013-bandit, k = 3, 100 trials'
plot 'data/c0.dat' using 1:2:3:4 with yerrorlines title 'ftal-bandit eps=inf', 'data/c1.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.1', 'data/c2.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.5', 'data/c3.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=1', 'data/c4.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=2', 22465.2*(x/1000000)**0.75 with lines dashtype 2 title 'T^{0.75}'
set terminal pngcairo size 800,560
set output 'smith2013-bandit-k5.png'
set title 'smith2013-bandit, k = 5, 100 trials'
plot 'data/c5.dat' using 1:2:3:4 with yerrorlines title 'ftal-bandit eps=inf', 'data/c6.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.1', 'data/c7.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.5', 'data/c8.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=1', 'data/c9.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=2', 68253.4*(x/1000000)**0.75 with lines dashtype 2 title 'T^{0.75}'
set terminal svg size 800,560
set output 'smith2013-bandit-k5.svg'
set title 'smith2013-bandit, k = 5, 100 trials'
plot 'data/c5.dat' using 1:2:3:4 with yerrorlines title 'ftal-bandit eps=inf', 'data/c6.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.1', 'data/c7.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=0.5', 'data/c8.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=1', 'data/c9.dat' using 1:2:3:4 with yerrorlines title 'pftal-bandit eps=2', 68253.4*(x/1000000)**0.75 with lines dashtype 2 title 'T^{0.75}'
