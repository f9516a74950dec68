/* The aggregator's generators (rand.h): xoshiro256++ and the samplers built on it, and the
 * privacy-noise source agg_noise.
 *
 * Speed matters here: Thompson sampling at K = 20 draws 20 Beta variates per round, and the
 * target is millions of rounds per second. The normal sampler is therefore a 256-layer ziggurat
 * (one 64-bit draw and one compare in ~99% of calls), Gamma is Marsaglia-Tsang on top of it
 * with a shape-dependent squeeze and a uniform mostly taken from the normal's spare bits (one
 * draw and no logarithm for most variates; its shape constants can be prepared once,
 * agg_gamma_shape), and Beta is G1 / (G1 + G2). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "rand.h"

#include "ctxstat_internal.h" /* the exact discrete Gaussian (common/src/ctxstat.c) */

/* The hot Gamma path must be inlined into its callers for the local-state copy below to live in
 * registers; the rare branches stay out of line so the hot loop stays small. */
#if defined(__GNUC__)
#define HOT_INLINE static inline __attribute__((always_inline))
#define COLD       static __attribute__((noinline, cold))
#define LIKELY(x)  __builtin_expect(!!(x), 1)
#else
#define HOT_INLINE static inline
#define COLD       static
#define LIKELY(x)  (x)
#endif

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256++ 1.0 (Blackman and Vigna), the reference algorithm verbatim. */
static inline uint64_t next(agg_rand *r)
{
    uint64_t *s = r->s;
    const uint64_t result = rotl(s[0] + s[3], 23) + s[0];
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void agg_rand_seed_u64(agg_rand *r, uint64_t seed)
{
    /* splitmix64 is a bijection of its counter, so four consecutive outputs are never all
     * zero. */
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

void agg_rand_seed(agg_rand *r, ldpb_rng *src)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = ldpb_rng_u64(src);
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) /* probability 2^-256, but never stuck */
        agg_rand_seed_u64(r, 0);
}

uint64_t agg_rand_u64(agg_rand *r)
{
    return next(r);
}

static inline double uniform(agg_rand *r)
{
    return (double)(next(r) >> 11) * 0x1.0p-53;
}

static inline double uniform_pos(agg_rand *r)
{
    return ((double)(next(r) >> 11) + 0.5) * 0x1.0p-53;
}

double agg_rand_uniform(agg_rand *r)
{
    return uniform(r);
}

double agg_rand_uniform_pos(agg_rand *r)
{
    return uniform_pos(r);
}

/* 64 x 64 -> 128-bit product as (high, low) words. */
static inline uint64_t mul_hi_lo(uint64_t a, uint64_t b, uint64_t *low)
{
#ifdef __SIZEOF_INT128__
    __extension__ typedef unsigned __int128 u128;
    u128 m = (u128)a * b;
    *low = (uint64_t)m;
    return (uint64_t)(m >> 64);
#else
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *low = (mid << 32) | (p00 & 0xffffffffu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

uint64_t agg_rand_below(agg_rand *r, uint64_t bound)
{
    /* Lemire's multiply-shift with rejection: the high word of x * bound is uniform once the
     * low word avoids the 2^64 mod bound values that would over-represent some results. */
    uint64_t low;
    uint64_t high = mul_hi_lo(next(r), bound, &low);
    if (low < bound) {
        uint64_t reject_below = (0 - bound) % bound;
        while (low < reject_below)
            high = mul_hi_lo(next(r), bound, &low);
    }
    return high;
}

/* Ziggurat tables for the standard normal, 256 layers of equal area V = 0.00492867323399 under
 * f(x) = exp(-x^2/2), base layer edge R = 3.6541528853610088 (Marsaglia and Tsang 2000, as
 * parametrised by Doornik 2005). zig_x[0] = V / f(R) is the width of the base strip (rectangle
 * plus tail), zig_x[1] = R, zig_x[i+1] = f^-1(f(zig_x[i]) + V / zig_x[i]), zig_x[256] = 0;
 * zig_f[i] = f(zig_x[i]). Computed in long double and rounded once. */
#define ZIG_R 3.6541528853610088
static const double zig_x[257] = {
    3.9107579595370918,
    3.6541528853610088,
    3.4492782985609645,
    3.3202447338391661,
    3.2245750520470291,
    3.14788928951715,
    3.083526132001233,
    3.0278377917686354,
    2.9786032798808448,
    2.9343668672078547,
    2.8941210536123481,
    2.8571387308721325,
    2.8228773968253251,
    2.7909211740007862,
    2.760944005278823,
    2.7326853590428271,
    2.7059336561218581,
    2.6805146432845222,
    2.6562830375755024,
    2.6331163936303246,
    2.6109105184875485,
    2.5895759867069956,
    2.569035452680537,
    2.5492215503234608,
    2.5300752321585169,
    2.5115444416253427,
    2.4935830412696807,
    2.4761499396691433,
    2.4592083743333113,
    2.4427253181989572,
    2.4266709849357264,
    2.411018413899686,
    2.395743119780481,
    2.3808227951706264,
    2.3662370567158191,
    2.3519672273776604,
    2.3379961487950318,
    2.3243080188696235,
    2.3108882505998505,
    2.2977233489013305,
    2.2848008027229469,
    2.2721089902268248,
    2.2596370951722187,
    2.2473750329458086,
    2.2353133849283289,
    2.2234433400909066,
    2.2117566428825457,
    2.2002455466096493,
    2.1889027716247225,
    2.1777214677386429,
    2.1666951803526473,
    2.1558178198750646,
    2.1450836340462049,
    2.1344871828443215,
    2.1240233156878165,
    2.1136871506849348,
    2.1034740557131477,
    2.0933796311370512,
    2.0833996939965527,
    2.0735302635169797,
    2.0637675478099573,
    2.0541079316488662,
    2.0445479652157341,
    2.03508435372781,
    2.0257139478620343,
    2.0164337349043726,
    2.0072408305586857,
    1.9981324713565654,
    1.9891060076155724,
    1.9801588968985995,
    1.9712886979317705,
    1.9624930649424628,
    1.9537697423827352,
    1.945116560006755,
    1.9365314282737598,
    1.9280123340507191,
    1.91955733659123,
    1.9111645637692833,
    1.9028322085484475,
    1.8945585256687112,
    1.8863418285347775,
    1.8781804862909786,
    1.8700729210692375,
    1.8620176053976329,
    1.8540130597581486,
    1.84605785028312,
    1.8381505865807291,
    1.830289919680667,
    1.8224745400917837,
    1.8147031759641681,
    1.8069745913486939,
    1.7992875845475806,
    1.7916409865500105,
    1.7840336595472768,
    1.7764644955223454,
    1.7689324149090784,
    1.7614363653167071,
    1.7539753203154553,
    1.7465482782794932,
    1.7391542612836695,
    1.7317923140507077,
    1.7244615029457762,
    1.7171609150155409,
    1.7098896570690061,
    1.7026468547976139,
    1.6954316519322385,
    1.6882432094348585,
    1.6810807047228231,
    1.6739433309237604,
    1.6668302961592867,
    1.6597408228557895,
    1.6526741470806485,
    1.6456295179023606,
    1.6386061967731114,
    1.6316034569324225,
    1.6246205828305689,
    1.6176568695705347,
    1.6107116223673341,
    1.6037841560235833,
    1.5968737944202616,
    1.5899798700216488,
    1.5831017233934717,
    1.5762387027333329,
    1.5693901634125342,
    1.5625554675284394,
    1.5557339834665547,
    1.5489250854715353,
    1.5421281532263473,
    1.5353425714388427,
    1.5285677294350239,
    1.5218030207582924,
    1.5150478427739917,
    1.5083015962785713,
    1.5015636851127059,
    1.4948335157777179,
    1.4881104970546537,
    1.4813940396253753,
    1.4746835556950251,
    1.4679784586152305,
    1.4612781625074076,
    1.4545820818855231,
    1.4478896312776697,
    1.441200224845798,
    1.4345132760029464,
    1.4278281970272901,
    1.4211443986723227,
    1.4144612897724644,
    1.4077782768433711,
    1.4010947636762021,
    1.3944101509250708,
    1.3877238356868842,
    1.3810352110727415,
    1.3743436657700301,
    1.3676485835943175,
    1.3609493430301014,
    1.3542453167594299,
    1.3475358711773586,
    1.3408203658931515,
    1.3340981532160832,
    1.3273685776246245,
    1.3206309752177299,
    1.3138846731468685,
    1.3071289890273534,
    1.3003632303274333,
    1.2935866937335172,
    1.286798664489786,
    1.2799984157103326,
    1.2731852076618431,
    1.2663582870146877,
    1.2595168860601436,
    1.252660221891297,
    1.245787495544997,
    1.2388978911020267,
    1.2319905747424442,
    1.2250646937528074,
    1.2181193754817259,
    1.2111537262399106,
    1.2041668301405593,
    1.1971577478755853,
    1.190125515422801,
    1.1830691426787601,
    1.1759876120114892,
    1.1688798767268331,
    1.1617448594415736,
    1.1545814503558511,
    1.147388505416733,
    1.1401648443639949,
    1.1329092486483361,
    1.1256204592112935,
    1.118297174115062,
    1.1109380460092486,
    1.1035416794202673,
    1.0961066278476026,
    1.0886313906495135,
    1.0811144096988887,
    1.0735540657878713,
    1.065948674757506,
    1.058296483326006,
    1.0505956645862067,
    1.0428443131393701,
    1.0350404398286048,
    1.0271819660307508,
    1.0192667174605288,
    1.011292417434978,
    1.0032566795395907,
    0.99515699962994242,
    0.9869907470938456,
    0.97875515528893708,
    0.97044731105886384,
    0.96206414321760447,
    0.95360240987557177,
    0.94505868446257024,
    0.93642934028089608,
    0.92771053339623399,
    0.9188981836437341,
    0.909987953490768,
    0.90097522445517364,
    0.89185507072679149,
    0.88262222957890935,
    0.87327106808249377,
    0.86379554554682603,
    0.85418917100155978,
    0.84444495490242288,
    0.83455535407951797,
    0.82451220874528786,
    0.81430667012806346,
    0.803929116982664,
    0.79336905883315179,
    0.78261502329958776,
    0.77165442421673835,
    0.76047340642208217,
    0.74905666200958054,
    0.73738721142583752,
    0.72544614090130233,
    0.7132122851820214,
    0.70066184109758312,
    0.68776789278625627,
    0.67449982282743504,
    0.66082257423420454,
    0.64669571488438737,
    0.63207223637502308,
    0.61689698999623388,
    0.60110461774393875,
    0.58461676609372049,
    0.56733825704047136,
    0.5491517023130249,
    0.52990972064649333,
    0.50942332958593139,
    0.48744396612175228,
    0.46363433677176097,
    0.4375184021866601,
    0.40838913458799792,
    0.37512133285046234,
    0.3357375191804553,
    0.28617459174725512,
    0.21524189591326542,
    0,
};
static const double zig_f[257] = {
    0.00047746776458665189,
    0.0012602859304985975,
    0.0026090727461063621,
    0.0040379725933718715,
    0.0055224032992647549,
    0.0070508754713921092,
    0.0086165827694229119,
    0.0102149714397311,
    0.011842757857943099,
    0.013497450601780796,
    0.015177088307982065,
    0.016880083152595836,
    0.018605121275783343,
    0.020351096230109344,
    0.022117062707379908,
    0.023902203305873237,
    0.025705804008632649,
    0.027527235669693315,
    0.029365939758230111,
    0.031221417192023686,
    0.033093219458688684,
    0.034980941461833046,
    0.036884215688691123,
    0.038802707404656897,
    0.040736110656078739,
    0.042684144916619336,
    0.044646552251446515,
    0.046623094902089671,
    0.048613553216035131,
    0.050617723861121747,
    0.052635418276973607,
    0.05466646132507786,
    0.056710690106399425,
    0.058767952921137928,
    0.06083810834975175,
    0.062921024437977785,
    0.065016577971470355,
    0.06712465382802392,
    0.069245144397250172,
    0.071377949059141826,
    0.073522973714240825,
    0.075680130359194811,
    0.077849336702372013,
    0.080030515814947328,
    0.082223595813495504,
    0.084428509570654453,
    0.086645194450867546,
    0.088873592068593937,
    0.091113648066700414,
    0.093365311913026341,
    0.095628536713353057,
    0.097903279039215349,
    0.10018949876917177,
    0.10248715894230599,
    0.10479622562286683,
    0.10711666777507266,
    0.10944845714720981,
    0.1117915681642454,
    0.11414597782825504,
    0.11651166562603685,
    0.11888861344334545,
    0.12127680548523516,
    0.12367622820205106,
    0.12608687022064999,
    0.12850872228047336,
    0.13094177717412792,
    0.13338602969216254,
    0.13584147657175705,
    0.13830811644906399,
    0.14078594981496803,
    0.14327497897404687,
    0.14577520800653765,
    0.14828664273312839,
    0.15080929068240986,
    0.15334316106083742,
    0.15588826472506426,
    0.15844461415651989,
    0.16101222343811727,
    0.16359110823298259,
    0.16618128576510971,
    0.16878277480185,
    0.17139559563815535,
    0.17401977008249914,
    0.17665532144440646,
    0.17930227452353026,
    0.18196065560021638,
    0.18463049242750437,
    0.18731181422451676,
    0.19000465167119293,
    0.19270903690432864,
    0.1954250035148854,
    0.19815258654653795,
    0.20089182249543117,
    0.20364274931112133,
    0.20640540639867916,
    0.20917983462193548,
    0.21196607630785277,
    0.21476417525200839,
    0.21757417672517823,
    0.22039612748101145,
    0.22323007576478943,
    0.22607607132326474,
    0.22893416541557743,
    0.23180441082524855,
    0.23468686187325269,
    0.23758157443217368,
    0.24048860594144916,
    0.24340801542371202,
    0.24633986350223877,
    0.2492842124195167,
    0.25224112605694377,
    0.25521066995567709,
    0.25819291133864797,
    0.2611879191337636,
    0.2641957639983174,
    0.26721651834463167,
    0.27025025636695982,
    0.27329705406967564,
    0.2763569892967811,
    0.27943014176276515,
    0.28251659308484933,
    0.28561642681665805,
    0.28872972848335393,
    0.29185658561828109,
    0.29499708780116268,
    0.29815132669790145,
    0.30131939610203423,
    0.30450139197789644,
    0.30769741250555399,
    0.31090755812756399,
    0.31413193159763048,
    0.31737063803122267,
    0.32062378495823052,
    0.32389148237773235,
    0.32717384281495887,
    0.33047098138053732,
    0.33378301583210873,
    0.33711006663841303,
    0.34045225704594562,
    0.34380971314829151,
    0.34718256395825153,
    0.35057094148288126,
    0.35397498080156936,
    0.35739482014729063,
    0.36083060099117586,
    0.36428246813054976,
    0.36775056978059639,
    0.37123505766982157,
    0.37473608713949164,
    0.37825381724723833,
    0.38178841087503163,
    0.38534003484173424,
    0.38890886002046487,
    0.39249506146101104,
    0.39609881851754741,
    0.399720314981932,
    0.40335973922286922,
    0.40701728433124823,
    0.41069314827198344,
    0.4143875340427069,
    0.41810064983968476,
    0.42183270923135352,
    0.42558393133990086,
    0.42935454103134185,
    0.43314476911457434,
    0.43695485254992955,
    0.44078503466777019,
    0.44463556539772808,
    0.4485067015092144,
    0.45239870686388289,
    0.45631185268077407,
    0.46024641781492398,
    0.46420268905027928,
    0.46818096140782267,
    0.4721815384698837,
    0.47620473272168418,
    0.48025086591125016,
    0.48432026942891204,
    0.4884132847077125,
    0.4925302636461491,
    0.49667156905479676,
    0.50083757512848259,
    0.50502866794582923,
    0.50924524599813648,
    0.51348772074974336,
    0.51775651723220117,
    0.52205207467479542,
    0.52637484717418725,
    0.53072530440619448,
    0.53510393238302012,
    0.53951123425954528,
    0.5439477311926505,
    0.54841396325792169,
    0.55291049042852036,
    0.55743789362148666,
    0.56199677581727825,
    0.5665877632589521,
    0.5712115067380753,
    0.57586868297521088,
    0.5805599961036837,
    0.58528617926630055,
    0.59004799633579219,
    0.59484624377099149,
    0.59968175262216805,
    0.60455539070054987,
    0.60946806492889583,
    0.61442072389207725,
    0.61941436060903965,
    0.62445001555027468,
    0.62952877992812872,
    0.63465179929096061,
    0.63982027745643955,
    0.64503548082425244,
    0.65029874311429503,
    0.65561147058322522,
    0.66097514778024191,
    0.6663913439123812,
    0.67186171990076693,
    0.67738803622251353,
    0.68297216164879182,
    0.6886160830085275,
    0.69432191613003302,
    0.70009191814049054,
    0.70592850133679785,
    0.71183424888235902,
    0.71781193263490195,
    0.72386453347288215,
    0.72999526456580299,
    0.73620759813126724,
    0.7425052963446368,
    0.74889244722372728,
    0.75537350651175517,
    0.76195334684154714,
    0.7686373158033355,
    0.77543130498613899,
    0.78234183265986268,
    0.78937614357119934,
    0.7965423304282554,
    0.80384948317639027,
    0.81130787431822082,
    0.81892919160941557,
    0.82672683395209512,
    0.83471629299293126,
    0.84291565311844197,
    0.85134625846512446,
    0.86003362120300952,
    0.86900868804379405,
    0.87830965581614773,
    0.88798466076340077,
    0.89809592190630505,
    0.90872644006056391,
    0.91999150504836136,
    0.93206007596899143,
    0.94519895345307936,
    0.95987909181241737,
    0.9771017012827331,
    1,
};

/* A double in [2, 4) from the top 48 bits of a draw (on the grid of 2^-47) by filling in the
 * exponent: cheaper than an integer conversion on the hot path. Bits 8..15 stay free for the
 * Gamma sampler's uniform (below). */
static inline double bits_two_four(uint64_t bits)
{
    uint64_t m = ((bits >> 16) << 4) | UINT64_C(0x4000000000000000);
    double f;
    memcpy(&f, &m, sizeof f);
    return f;
}

/* The tail beyond R (Marsaglia 1964): x = -ln(U1)/R, accepted when -2 ln(U2) >= x^2. */
static double normal_tail(agg_rand *r, int negative)
{
    double x, y;
    do {
        x = log(uniform_pos(r)) / ZIG_R;
        y = log(uniform_pos(r));
    } while (-2.0 * y < x * x);
    return negative ? x - ZIG_R : ZIG_R - x;
}

/* One ziggurat step from a draw: the low 8 bits pick the layer, the top 48 bits (disjoint) give
 * u uniform on 2^48 points of [-1, 1). Returns 1 with *x set when the point is inside the layer's
 * rectangle, which is ~99% of draws and needs nothing else. */
static inline int zig_rect(uint64_t bits, size_t *layer, double *u, double *x)
{
    size_t i = (size_t)(bits & 0xff);
    *layer = i;
    *u = bits_two_four(bits) - 3.0; /* 2 f - 3 for f in [1, 2): exact */
    *x = *u * zig_x[i];
    return fabs(*x) < zig_x[i + 1];
}

static double normal(agg_rand *r);

/* The rest of a ziggurat draw whose rectangle test failed: the base layer's tail, or the wedge
 * under the density, or (rejected) a fresh draw. */
COLD double normal_finish(agg_rand *r, size_t i, double u, double x)
{
    if (i == 0)
        return normal_tail(r, u < 0.0);
    if (zig_f[i + 1] + (zig_f[i] - zig_f[i + 1]) * uniform(r) < exp(-0.5 * x * x))
        return x;
    return normal(r);
}

static double normal(agg_rand *r)
{
    size_t i;
    double u, x;
    if (zig_rect(next(r), &i, &u, &x))
        return x;
    return normal_finish(r, i, u, x);
}

double agg_rand_normal(agg_rand *r)
{
    return normal(r);
}

void agg_gamma_shape_init(agg_gamma_shape *g, double shape)
{
    /* Below 1, Gamma(a) = Gamma(a + 1) * U^(1/a) (Marsaglia and Tsang 2000, section 6). */
    g->boost = shape < 1.0;
    g->inv_shape = g->boost ? 1.0 / shape : 0.0; /* a division saved per TS observe */
    double a = g->boost ? shape + 1.0 : shape;
    g->d = a - 1.0 / 3.0;
    g->c = 1.0 / sqrt(9.0 * g->d);
    g->k = g->c * g->c * (1.0 / 12.0);
}

/* Marsaglia-Tsang for shape a >= 1 with d = a - 1/3, c = 1/sqrt(9d): propose d v, v = (1 + y)^3,
 * y = c X with X normal, and accept when v > 0 and ln U < X^2/2 + d (1 - v + ln v) for U uniform.
 *
 * Squeeze. Since 9 d c^2 = 1 the right side is 3 d F(y) with F(y) = ln(1+y) - y + y^2/2 - y^3/3
 * = -int_0^y t^3/(1+t) dt, so F(y) >= -y^4/4 for y >= 0 and F(y) >= -y^4/(4 (1+y)) for
 * -1 < y < 0. With ln U <= U - 1 and 3 d c^4 / 4 = c^2 / 12, a proposal is accepted whenever
 *     (1 - U) w > c^2 X^4 / 12,   w = min(1 + y, 1)
 * (never true for 1 + y <= 0, where v <= 0 is rejected). This is an implication of the exact
 * test, so the accepted proposals are exactly those of the exact test. It accepts 92.9% of the
 * proposals outright at a = 1 (the exact test accepts 95.2%) and 99.68% at a = 10 (of 99.72%),
 * where Marsaglia and Tsang's shape-free squeeze 1 - 0.0331 X^4 accepts 91.7% at every shape and
 * the two logarithms of the rest cost more than the rest of the draw (measured over 2e7
 * proposals per shape; the squeeze never accepted a proposal the exact test rejects). mt_decide
 * takes the undecided ones: their squeeze first (the better one for small d and y << 0), then
 * the logarithms.
 *
 * U from fewer draws. U is uniform on the 2^52 points (k + 1/2) 2^-52. Its top 8 bits t come
 * from bits 8..15 of the normal's first draw, which the ziggurat does not use (layer: bits 0..7,
 * abscissa: bits 16..63), so they are independent of X whatever path the normal takes. With U in
 * [t/256, (t + 1)/256), 1 - U > (255 - t)/256: if the squeeze holds with that bound it holds for
 * every U of the interval and the remaining 44 bits are never drawn; otherwise they come from a
 * fresh draw and the full test runs. The pair (X, U) and the decision as a function of it are
 * unchanged, so the law is exactly that of drawing all of U every time; only fewer generator
 * outputs are consumed and fewer branches go the rare way (at large shapes ~1 proposal in 250
 * needs the second draw; with 4 spare bits it was 1 in 16, and at shape 1-3 that branch cost TS
 * a tenth of its time). */
COLD int mt_decide(double d, double x, double v, double u)
{
    double x2 = x * x;
    if (!(v > 0.0))
        return 0;
    return u < 1.0 - 0.0331 * x2 * x2 || log(u) < 0.5 * x2 + d * (1.0 - v + log(v));
}

/* The sampler keeps the generator state in a local copy the compiler keeps in registers
 * (through a pointer it would store and reload the state around every draw). A rare branch
 * writes the state back, finishes out of line through the pointer versions, and reloads. */
typedef struct xs {
    uint64_t s0, s1, s2, s3;
} xs;

static inline uint64_t xs_next(xs *x)
{
    const uint64_t result = rotl(x->s0 + x->s3, 23) + x->s0;
    const uint64_t t = x->s1 << 17;
    x->s2 ^= x->s0;
    x->s3 ^= x->s1;
    x->s1 ^= x->s2;
    x->s0 ^= x->s3;
    x->s2 ^= t;
    x->s3 = rotl(x->s3, 45);
    return result;
}

static inline void xs_load(xs *x, const agg_rand *r)
{
    x->s0 = r->s[0];
    x->s1 = r->s[1];
    x->s2 = r->s[2];
    x->s3 = r->s[3];
}

static inline void xs_store(const xs *x, agg_rand *r)
{
    r->s[0] = x->s0;
    r->s[1] = x->s1;
    r->s[2] = x->s2;
    r->s[3] = x->s3;
}

HOT_INLINE double gamma_hot(xs *st, agg_rand *r, const agg_gamma_shape *g)
{
    const double d = g->d, c = g->c, k = g->k;
    for (;;) {
        size_t i;
        double u0, x;
        uint64_t bits = xs_next(st);
        if (!LIKELY(zig_rect(bits, &i, &u0, &x))) {
            xs_store(st, r);
            x = normal_finish(r, i, u0, x);
            xs_load(st, r);
        }
        double y1 = 1.0 + c * x;
        double v = y1 * y1 * y1;
        double w = y1 < 1.0 ? y1 : 1.0;
        double x2 = x * x;
        double kx4 = k * (x2 * x2);
        uint64_t top = (bits >> 8) & 0xff;
        if (LIKELY((double)(255 - top) * (1.0 / 256) * w > kx4))
            return d * v;
        uint64_t k52 = (top << 44) | (xs_next(st) >> 20);
        double u = ((double)k52 + 0.5) * 0x1.0p-52;
        if ((1.0 - u) * w > kx4 || mt_decide(d, x, v, u))
            return d * v;
    }
}

static double gamma_mt(agg_rand *r, const agg_gamma_shape *g)
{
    xs st;
    xs_load(&st, r);
    double x = gamma_hot(&st, r, g);
    xs_store(&st, r);
    return x;
}

/* ln Gamma(a) variate for a boosted (a < 1) shape: stays finite where the variate itself
 * underflows (tiny shapes put most of their mass far below the smallest double). */
static double log_gamma_boosted(agg_rand *r, const agg_gamma_shape *g)
{
    double x = gamma_mt(r, g);
    return log(x) + log(uniform_pos(r)) * g->inv_shape;
}

double agg_rand_gamma_shape(agg_rand *r, const agg_gamma_shape *g)
{
    xs st;
    xs_load(&st, r);
    double x = gamma_hot(&st, r, g);
    xs_store(&st, r);
    if (g->boost)
        x *= pow(uniform_pos(r), g->inv_shape);
    return x;
}

double agg_rand_gamma(agg_rand *r, double shape)
{
    agg_gamma_shape g;
    agg_gamma_shape_init(&g, shape);
    return agg_rand_gamma_shape(r, &g);
}

static double beta_boosted(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b)
{
    /* X / (X + Y) = 1 / (1 + exp(ln Y - ln X)), with no 0/0 when both underflow. */
    double lx = a->boost ? log_gamma_boosted(r, a) : log(gamma_mt(r, a));
    double ly = b->boost ? log_gamma_boosted(r, b) : log(gamma_mt(r, b));
    return 1.0 / (1.0 + exp(ly - lx));
}

void agg_rand_beta_fill(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b, size_t n,
                        double *out)
{
    xs st;
    xs_load(&st, r);
    for (size_t j = 0; j < n; j++) {
        if (a[j].boost || b[j].boost) {
            xs_store(&st, r);
            out[j] = beta_boosted(r, &a[j], &b[j]);
            xs_load(&st, r);
            continue;
        }
        double x = gamma_hot(&st, r, &a[j]);
        double y = gamma_hot(&st, r, &b[j]);
        out[j] = x / (x + y);
    }
    xs_store(&st, r);
}

uint32_t agg_rand_beta_argmax(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b,
                              uint32_t n)
{
    xs st;
    xs_load(&st, r);
    double best = -HUGE_VAL;
    uint32_t best_j = 0, ties = 0;
    for (uint32_t j = 0; j < n; j++) {
        double v;
        if (a[j].boost || b[j].boost) {
            xs_store(&st, r);
            v = beta_boosted(r, &a[j], &b[j]);
            xs_load(&st, r);
        } else {
            double x = gamma_hot(&st, r, &a[j]);
            double y = gamma_hot(&st, r, &b[j]);
            v = x / (x + y);
        }
        if (v == best) {
            /* Reservoir choice among equal maxima (continuous draws almost never tie). */
            xs_store(&st, r);
            ties++;
            if (agg_rand_below(r, ties) == 0)
                best_j = j;
            xs_load(&st, r);
            continue;
        }
        /* Selects without branching: new maxima come at unpredictable arms. */
        int greater = v > best;
        best_j = greater ? j : best_j;
        ties = greater ? 1 : ties;
        best = greater ? v : best;
    }
    xs_store(&st, r);
    return best_j;
}

double agg_rand_beta_shapes(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b)
{
    double out;
    agg_rand_beta_fill(r, a, b, 1, &out);
    return out;
}

double agg_rand_beta(agg_rand *r, double a, double b)
{
    agg_gamma_shape ga, gb;
    agg_gamma_shape_init(&ga, a);
    agg_gamma_shape_init(&gb, b);
    return agg_rand_beta_shapes(r, &ga, &gb);
}

void agg_rand_normal_fill(agg_rand *r, double *out, size_t n)
{
    xs st;
    xs_load(&st, r);
    for (size_t j = 0; j < n; j++) {
        size_t i;
        double u, x;
        if (!LIKELY(zig_rect(xs_next(&st), &i, &u, &x))) {
            xs_store(&st, r);
            x = normal_finish(r, i, u, x);
            xs_load(&st, r);
        }
        out[j] = x;
    }
    xs_store(&st, r);
}

/* GSL's binomial sampler (BTPE of Kachitvichyanukul and Schmeiser, with inversion for small
 * n p: an exact algorithm) drawing from an agg_rand through a gsl_rng whose state pointer is
 * the agg_rand itself, so nothing is allocated per call. */
static void gsl_agg_set(void *state, unsigned long seed)
{
    agg_rand_seed_u64(state, (uint64_t)seed);
}

static unsigned long gsl_agg_get(void *state)
{
    return (unsigned long)(next(state) >> 32);
}

static double gsl_agg_get_double(void *state)
{
    return uniform(state);
}

static const gsl_rng_type gsl_agg_type = {"agg-xoshiro256++", 0xffffffffUL, 0,
                                          sizeof(agg_rand),   gsl_agg_set,  gsl_agg_get,
                                          gsl_agg_get_double};

/* gsl_ran_binomial takes an unsigned int and keeps intermediate counts in int. Its BTPE squeeze
 * also squares |x - mode| in int arithmetic (GSL 2.7 binomial_tpe.c: `k * k`), which overflows
 * once |x - mode| > 46340: at n p (1-p) ~ 1e9 that is a 1.5-sigma event and the variance comes out
 * ~10% too large (measured). With n p (1-p) <= 2^20 the standard deviation is at most 1024 and
 * the hat reaches the overflow only beyond 45 sigma, with probability below 1e-40; larger
 * problems are first split (below) until they are that small. */
#define BINOMIAL_DIRECT_MAX ((uint64_t)INT_MAX)
#define BINOMIAL_NPQ_MAX    1048576.0

static int binomial_direct(uint64_t n, double p)
{
    return n <= BINOMIAL_DIRECT_MAX && (double)n * p * (1.0 - p) <= BINOMIAL_NPQ_MAX;
}

uint64_t agg_rand_binomial(agg_rand *r, uint64_t n, double p)
{
    if (!(p > 0.0) || n == 0)
        return 0;
    if (p >= 1.0)
        return n;
    uint64_t acc = 0;
    /* Larger problems: split at an order statistic (Knuth, TAOCP vol. 2, 3.4.1 F). With U_(a) the
     * a-th smallest of n uniforms, X = U_(a) ~ Beta(a, n - a + 1). If X >= p, the successes are
     * the a - 1 uniforms below X that fall below p: Binomial(a - 1, p / X). Otherwise they are
     * those a plus the n - a uniforms above X that fall below p: a + Binomial(n - a,
     * (p - X)/(1 - X)). Each step halves n; the law is exact up to floating-point rounding. */
    while (n > 0 && p > 0.0 && p < 1.0 && !binomial_direct(n, p)) {
        uint64_t a = n / 2 + 1;
        double x = agg_rand_beta(r, (double)a, (double)(n - a + 1));
        if (x >= p) {
            n = a - 1;
            p = p / x;
        } else {
            acc += a;
            n -= a;
            p = (p - x) / (1.0 - x);
        }
        p = p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);
    }
    if (n == 0 || !(p > 0.0))
        return acc;
    if (p >= 1.0)
        return acc + n;
    gsl_rng g = {&gsl_agg_type, r};
    return acc + gsl_ran_binomial(&g, p, (unsigned int)n);
}

double agg_rand_laplace(agg_rand *r, double scale)
{
    double u = uniform_pos(r);
    return u < 0.5 ? scale * log(2.0 * u) : -scale * log(2.0 * (1.0 - u));
}

/* SECURE releases keep a few grid mechanisms, keyed by the (sensitivity, scale) shape they were
 * built and checked for: a policy releases with one or two shapes at a time (a tree's nodes; a
 * hybrid's log and tree parts; a DP-SE epoch), so building one (a few dozen exp()) is rare. */
#define RELEASE_MECHS 4

typedef struct release_shape {
    double sens, scale; /* the key */
    double c;           /* the unit, a power of two */
    int k;              /* S = 2^k grid steps per unit */
    double to_steps;    /* 2^k / c, the value scale to grid steps (a power of two) */
    double step;        /* c / 2^k = 1 / to_steps, the grid step on the value scale */
    double unit_steps;  /* 2^k: the mechanism's unit-scale output to grid steps */
    ldpb_mech *m;       /* NULL: empty slot */
} release_shape;

struct agg_noise {
    agg_noise_kind kind;
    ldpb_rng *rng;
    agg_rand *fast;
    ldpb_mech *unit; /* SECURE: the production Laplace mechanism at epsilon 1 (scale 1) */
    release_shape rel[RELEASE_MECHS];
    unsigned rel_next;
};

ldpb_err agg_noise_new(agg_noise **out, agg_noise_kind kind, ldpb_rng *rng, agg_rand *fast)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (kind == AGG_NOISE_SECURE ? !rng : (kind != AGG_NOISE_FAST || !fast))
        return LDPB_EINVAL;
    agg_noise *n = calloc(1, sizeof *n);
    if (!n)
        return LDPB_ENOMEM;
    n->kind = kind;
    if (kind == AGG_NOISE_SECURE) {
        ldpb_mech_opts o;
        ldpb_mech_opts_init(&o, LDPB_MECH_LAPLACE, 1.0);
        ldpb_err err = ldpb_mech_new(&n->unit, &o);
        if (err) {
            free(n);
            return err;
        }
        n->rng = rng;
    } else {
        n->fast = fast;
    }
    *out = n;
    return LDPB_OK;
}

void agg_noise_free(agg_noise *n)
{
    if (!n)
        return;
    ldpb_mech_free(n->unit);
    for (unsigned i = 0; i < RELEASE_MECHS; i++)
        ldpb_mech_free(n->rel[i].m);
    free(n);
}

agg_noise_kind agg_noise_get_kind(const agg_noise *n)
{
    return n->kind;
}

double agg_noise_laplace(agg_noise *n, double scale)
{
    if (!(scale > 0.0) || !isfinite(scale))
        return NAN; /* misuse: propagate NaN rather than release an unnoised value */
    if (n->kind == AGG_NOISE_FAST)
        return agg_rand_laplace(n->fast, scale);
    /* Exact two-sided geometric noise on the 2^-16 grid, scale 1 (slightly above, never
     * below), from the ChaCha20 stream: the floating-point-safe sampler of common/. The input 0
     * is a grid point, so only noise is added. */
    double y = 0.0;
    if (ldpb_mech_privatize_unit(n->unit, n->rng, 0.0, &y) != LDPB_OK)
        return NAN;
    return scale * y;
}

/* A gsl_rng whose state is an ldpb_rng pointer, so GSL's samplers draw from the secure stream. */
typedef struct gsl_ldpb_state {
    ldpb_rng *rng;
} gsl_ldpb_state;

static void gsl_ldpb_set(void *state, unsigned long seed)
{
    (void)state;
    (void)seed;
}

static unsigned long gsl_ldpb_get(void *state)
{
    return (unsigned long)(ldpb_rng_u64(((gsl_ldpb_state *)state)->rng) >> 32);
}

static double gsl_ldpb_get_double(void *state)
{
    return ldpb_rng_double(((gsl_ldpb_state *)state)->rng);
}

static const gsl_rng_type gsl_ldpb_type = {"ldpb-chacha20",        0xffffffffUL, 0,
                                           sizeof(gsl_ldpb_state), gsl_ldpb_set, gsl_ldpb_get,
                                           gsl_ldpb_get_double};

double agg_noise_normal(agg_noise *n)
{
    if (n->kind == AGG_NOISE_FAST)
        return agg_rand_normal(n->fast);
    gsl_ldpb_state st = {n->rng};
    gsl_rng g = {&gsl_ldpb_type, &st};
    return gsl_ran_gaussian_ziggurat(&g, 1.0);
}

double agg_noise_gamma(agg_noise *n, double shape)
{
    if (!(shape > 0.0) || !isfinite(shape))
        return NAN;
    if (n->kind == AGG_NOISE_FAST)
        return agg_rand_gamma(n->fast, shape);
    gsl_ldpb_state st = {n->rng};
    gsl_rng g = {&gsl_ldpb_type, &st};
    return gsl_ran_gamma(&g, shape, 1.0);
}

ldpb_err agg_noise_dgauss(agg_noise *n, uint64_t sigma2, int64_t *out)
{
    if (!n || !out || n->kind != AGG_NOISE_SECURE || sigma2 < 1 || sigma2 > ((uint64_t)1 << 56))
        return LDPB_EINVAL;
    *out = ctxstat_dgauss(n->rng, sigma2);
    return LDPB_OK;
}

ldpb_err agg_noise_round(agg_noise *n, double x, int64_t *out)
{
    if (!n || !out || !isfinite(x) || !(fabs(x) < 0x1p62))
        return LDPB_EINVAL;
    double f = floor(x);
    uint64_t bits = n->kind == AGG_NOISE_SECURE ? ldpb_rng_u64(n->rng) : agg_rand_u64(n->fast);
    /* (bits >> 11) 2^-53 is an exact double in [0, 1); the comparison is exact */
    *out = (int64_t)f + (ldexp((double)(bits >> 11), -53) < x - f);
    return LDPB_OK;
}

double agg_noise_uniform_pos(agg_noise *n)
{
    if (n->kind == AGG_NOISE_FAST)
        return agg_rand_uniform_pos(n->fast);
    double u;
    do
        u = ldpb_rng_double(n->rng);
    while (u == 0.0);
    return u;
}

/* The grid exponent k of common/'s Laplace mechanism at epsilon e (mech_laplace.c: a resolution
 * of 2^-16 of the noise scale): its grid is 2^-k of the unit and S = 2^k steps span the unit. */
static int grid_bits(double e)
{
    int k = 16 + (int)ceil(log2(e));
    return k < 0 ? 0 : (k > 40 ? 40 : k);
}

/* An upper bound on the privacy loss of mechanism m when its input moves by at most `shift`
 * steps, shift <= S: lambda shift plus the threshold-rounding term, which is at most
 * eps_eff - lambda S (mech_laplace.c builds eps_eff >= lambda S + that term). lambda is read back
 * from the variance the mechanism reports, Var = g^2 / (2 sinh^2(lambda / 2)). */
static double release_loss(const ldpb_mech *m, double shift)
{
    double g = ldpb_mech_laplace_grid(m);
    double lam = 2 * asinh(g / sqrt(2 * ldpb_mech_noise_variance(m))) * (1 + 0x1p-40);
    return lam * shift + (ldpb_mech_epsilon_effective(m) - lam / g);
}

/* Builds the grid mechanism for releases of sensitivity sens at noise scale `scale` into *r.
 * The unit c is a power of two at least the scale and a little above the sensitivity, so x / c is
 * exact and moves by D = sens / c < 1 at most. On a grid of S = 2^k steps per unit, x / c is
 * rounded to the nearest step: neighbouring inputs land at most D S + 1 steps apart, and common/'s
 * mechanism at epsilon e pays about e (D + 1/S + 1e-7) for that (docs/privacy.md 5.7), so e is
 * chosen to make this the requested eps = sens / scale, and the mechanism's own figures then
 * confirm the bound. e comes out near c / scale, in [1, 2) unless eps is large; S depends on e,
 * hence the fixed point. */
static ldpb_err release_shape_build(release_shape *r, double sens, double scale)
{
    double eps = sens / scale;
    int ce;
    (void)frexp(fmax(scale, sens * (1 + 0x1p-10)), &ce);
    double c = ldexp(1.0, ce);
    double d = sens / c * (1 + 0x1p-50);
    double e = eps / d;
    int k = grid_bits(e);
    for (int round = 0; round < 4; round++) {
        e = eps / (d + ldexp(1.0, -k) + 1e-7) * (1 - 0x1p-40);
        if (e > LDPB_EPSILON_MAX)
            e = LDPB_EPSILON_MAX; /* only more noise than asked for: still within eps */
        if (grid_bits(e) == k)
            break;
        k = grid_bits(e);
    }
    double shift = ldexp(d, k) + 1;
    if (grid_bits(e) != k || !(shift <= ldexp(1.0, k)))
        return LDPB_ERANGE;
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, LDPB_MECH_LAPLACE, e);
    ldpb_mech *m = NULL;
    ldpb_err err = ldpb_mech_new(&m, &o);
    if (err)
        return err;
    /* The bound, from what the mechanism reports about itself (grid, lambda, eps_eff). */
    if (ldpb_mech_laplace_grid(m) != ldexp(1.0, -k) || !(release_loss(m, shift) <= eps)) {
        ldpb_mech_free(m);
        return LDPB_ERANGE;
    }
    ldpb_mech_free(r->m);
    r->sens = sens;
    r->scale = scale;
    r->c = c;
    r->k = k;
    r->to_steps = ldexp(1.0, k) / c;
    r->step = c / ldexp(1.0, k);
    r->unit_steps = ldexp(1.0, k);
    r->m = m;
    return LDPB_OK;
}

ldpb_err agg_noise_release(agg_noise *n, double x, double sens, double scale, double *out)
{
    if (!n || !out || !(scale > 0) || !(scale < INFINITY))
        return LDPB_EINVAL;
    if (n->kind == AGG_NOISE_FAST) {
        /* the simulations' hot path: nothing more than the textbook draw */
        *out = x + agg_rand_laplace(n->fast, scale);
        return LDPB_OK;
    }
    if (!(fabs(x) < INFINITY) || !(sens > 0) || !(sens < INFINITY))
        return LDPB_EINVAL;
    const release_shape *r = NULL;
    for (unsigned i = 0; i < RELEASE_MECHS && !r; i++)
        if (n->rel[i].m && n->rel[i].sens == sens && n->rel[i].scale == scale)
            r = &n->rel[i];
    if (!r) {
        release_shape *slot = &n->rel[n->rel_next];
        ldpb_err err = release_shape_build(slot, sens, scale);
        if (err)
            return err;
        n->rel_next = (n->rel_next + 1) % RELEASE_MECHS;
        r = slot;
    }
    /* Multiplications by powers of two are exact; below 2^51 in magnitude, adding and removing
     * 1.5 * 2^52 rounds to the nearest integer (ties to even) in the default rounding mode. */
    double v = x * r->to_steps;
    if (!(fabs(v) < 0x1p51))
        return LDPB_ERANGE;
    v = (v + 0x1.8p52) - 0x1.8p52;
    /* The input 0 is a grid point: y = Z 2^-k exactly, Z the integer discrete Laplace noise. */
    double y = 0;
    ldpb_err err = ldpb_mech_privatize_unit(r->m, n->rng, 0.0, &y);
    if (err)
        return err;
    double steps = v + y * r->unit_steps; /* an integer, exact below 2^53 */
    if (!(fabs(steps) < 0x1p53))
        return LDPB_ERANGE;
    *out = steps * r->step;
    return LDPB_OK;
}
