package org.ldpb;

import java.util.Objects;

/**
 * A local differential privacy mechanism ({@code ldpb_mech}, docs/privacy.md) with its own
 * system RNG (libsodium's CSPRNG through ldpb_rng), for apps that privatize values themselves.
 * The C library validates the parameters and computes the effective epsilon of what it
 * implements; the mechanism refuses (ERANGE) rather than exceed the requested epsilon.
 */
public final class Mechanism implements AutoCloseable {
    static {
        NativeLibrary.load();
    }

    private long handle;

    /** The defaults of {@code ldpb_mech_opts_init}: kappa 0.5, rewards on [0, 1]. */
    public Mechanism(MechanismKind kind, double epsilon) throws LdpbException {
        this(kind, epsilon, Double.NaN, 0.0, 1.0);
    }

    /**
     * @param kappa QUADRATIC's curvature in [-1, 1]; NaN for the default
     * @param rangeLo rewards are rescaled from [rangeLo, rangeHi] to [0, 1] and clipped
     */
    public Mechanism(MechanismKind kind, double epsilon, double kappa, double rangeLo,
            double rangeHi) throws LdpbException {
        Objects.requireNonNull(kind, "kind");
        if (kind.code < MechanismKind.LINEAR.code || kind.code > MechanismKind.LAPLACE.code)
            throw new IllegalArgumentException(kind + " is not a reward mechanism");
        ClientOptions.finite(epsilon, "epsilon");
        if (!Double.isNaN(kappa))
            ClientOptions.finite(kappa, "kappa");
        ClientOptions.finite(rangeLo, "rangeLo");
        ClientOptions.finite(rangeHi, "rangeHi");
        handle = nativeNew(kind.code, epsilon, kappa, rangeLo, rangeHi);
    }

    /** One privatized report of {@code reward}: 0 or 1 (Bernoulli), a grid value (Laplace). */
    public synchronized double privatize(double reward) throws LdpbException {
        ClientOptions.finite(reward, "reward");
        return nativePrivatize(open(), reward);
    }

    /** The requested epsilon. */
    public synchronized double epsilon() {
        return nativeEpsilon(open(), false);
    }

    /** The effective epsilon: a rounded-up bound on the implementation's privacy loss. */
    public synchronized double epsilonEffective() {
        return nativeEpsilon(open(), true);
    }

    @Override
    public synchronized void close() {
        long h = handle;
        handle = 0;
        if (h != 0)
            nativeFree(h);
    }

    private long open() {
        if (handle == 0)
            throw new IllegalStateException("the mechanism is closed");
        return handle;
    }

    private static native long nativeNew(int kind, double epsilon, double kappa, double lo,
            double hi) throws LdpbException;

    private static native double nativePrivatize(long h, double reward) throws LdpbException;

    private static native double nativeEpsilon(long h, boolean effective);

    private static native void nativeFree(long h);
}
