package org.ldpb;

import java.util.Collections;
import java.util.List;

/** An aggregator's status as {@link Client#status} returns it ({@code ldpb_status}). */
public final class Status {
    /** One arm ({@code ldpb_arm_status}); a value whose has-flag is false is 0. */
    public static final class Arm {
        public final int arm;
        public final long pulls;
        public final boolean hasEstimate;
        public final double estimate;
        public final boolean hasCi;
        public final double ciLow;
        public final double ciHigh;
        public final boolean hasActive;
        public final boolean active;

        Arm(int arm, long pulls, boolean hasEstimate, double estimate, boolean hasCi,
                double ciLow, double ciHigh, boolean hasActive, boolean active) {
            this.arm = arm;
            this.pulls = pulls;
            this.hasEstimate = hasEstimate;
            this.estimate = estimate;
            this.hasCi = hasCi;
            this.ciLow = ciLow;
            this.ciHigh = ciHigh;
            this.hasActive = hasActive;
            this.active = active;
        }
    }

    /** The policy's name, e.g. "ldp-ts-b". */
    public final String policy;
    /** "local", "central" or "nonprivate". */
    public final String model;
    /** Reports counted (each durable before it was acknowledged). */
    public final long reports;
    public final long assignments;
    /** In the order the aggregator sent them; unmodifiable. */
    public final List<Arm> arms;
    /** The experiment this status is of ("default" from an aggregator that names none). */
    public final String experiment;

    Status(String policy, String model, long reports, long assignments, Arm[] arms,
            String experiment) {
        this.policy = policy;
        this.model = model;
        this.reports = reports;
        this.assignments = assignments;
        this.arms = Collections.unmodifiableList(java.util.Arrays.asList(arms));
        this.experiment = experiment.isEmpty() ? "default" : experiment;
    }
}
