package org.ldpb;

/** The C library's {@code ldpb_err} codes (ldpb/err.h); the numbers are pinned. */
public enum LdpbError {
    OK(0), EINVAL(1), ENOMEM(2), ERANGE(3), ESTATE(4), EPROTO(5), ECRYPTO(6), ETRANSPORT(7),
    ETIMEDOUT(8), EBUDGET(9), EIO(10), ECORRUPT(11), EREPLAY(12), EVERSION(13), EAUTH(14),
    ENOTFOUND(15), EEXPIRED(16), EBUSY(17), ENOTSUP(18), ENOEXPERIMENT(19),
    /** A code this binding does not know (a newer library). */
    UNKNOWN(-1);

    private final int code;

    LdpbError(int code) {
        this.code = code;
    }

    /** The C value. */
    public int code() {
        return code;
    }

    /** The C library's name of a code ({@code ldpb_errname}), e.g. "LDPB_EBUDGET". */
    public static String cName(int code) {
        NativeLibrary.load();
        return nativeName(code);
    }

    private static native String nativeName(int code);

    /** The constant for a C value, {@link #UNKNOWN} for values this binding does not know. */
    public static LdpbError of(int code) {
        for (LdpbError e : values())
            if (e.code == code)
                return e;
        return UNKNOWN;
    }
}
