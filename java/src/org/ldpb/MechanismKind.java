package org.ldpb;

/** The mechanism an assignment asks for ({@code ldpb_client_mech}; the values are the wire's). */
public enum MechanismKind {
    LINEAR(1), QUADRATIC(2), EXPONENTIAL(3), LAPLACE(4), RAW(5), GAUSSIAN_STATS(6);

    final int code;

    MechanismKind(int code) {
        this.code = code;
    }

    /** The C value. */
    public int code() {
        return code;
    }

    static MechanismKind of(int code) {
        for (MechanismKind k : values())
            if (k.code == code)
                return k;
        throw new IllegalStateException("the library returned an unknown mechanism " + code);
    }
}
