package org.ldpb;

/** What {@link Client#flush} did ({@code ldpb_flush_stats}). */
public final class FlushStats {
    /** Acknowledged as durable. */
    public final long acked;
    /** Acknowledged as already counted (a resend whose ack was lost). */
    public final long duplicates;
    /** Refused for good (unknown or expired assignment, invalid): dropped. */
    public final long refused;
    /** Still queued: no answer, or the aggregator said retry later. */
    public final long left;

    FlushStats(long acked, long duplicates, long refused, long left) {
        this.acked = acked;
        this.duplicates = duplicates;
        this.refused = refused;
        this.left = left;
    }
}
