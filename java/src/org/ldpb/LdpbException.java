package org.ldpb;

/**
 * A call into the C library failed: {@link #error()} is its {@code ldpb_err}, {@link #detail()}
 * its one-line reason ({@code ldpb_client_errmsg}, or for the constructor the options that
 * failed). Bad arguments from Java (null, a closed handle, a wrong array length, a NaN) are
 * refused before any C call with the standard Java exceptions instead.
 */
public class LdpbException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final String detail;
    private final boolean reportAcked;

    LdpbException(int code, String name, String sentence, String detail, boolean reportAcked) {
        super(name + ": " + sentence + (detail.isEmpty() ? "" : " (" + detail + ")"));
        this.code = code;
        this.detail = detail;
        this.reportAcked = reportAcked;
    }

    /** The error as the enum; {@link LdpbError#UNKNOWN} for a code newer than this binding. */
    public LdpbError error() {
        return LdpbError.of(code);
    }

    /** The C {@code ldpb_err} value. */
    public int code() {
        return code;
    }

    /** The C library's one-line reason; "" if it gave none. */
    public String detail() {
        return detail;
    }

    /**
     * For {@link Client#reportAndAssign}: true when the report was acknowledged and only the next
     * assignment failed (ask with {@link Client#assign} later); false otherwise.
     */
    public boolean reportAcked() {
        return reportAcked;
    }
}
