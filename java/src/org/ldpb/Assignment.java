package org.ldpb;

/**
 * An assignment as {@link Client#assign} returns it ({@code ldpb_assignment}): the arm to use and
 * the mechanism the report must use. A plain immutable value; the library keeps its own record of
 * it in the ledger, so a report of the same assignment, even after a restart, resends the value
 * sent before. Only the library creates assignments.
 */
public final class Assignment {
    private final byte[] id;
    private final int arm;
    private final int mechanism;
    private final double epsilon;
    private final double kappa;
    private final long expiresAtMs;
    private final double propensity;
    private final long policyVersion;
    // The local contextual mode's parameters, kept so that the C struct round-trips exactly.
    private final int localD;
    private final double localDelta;
    private final double localFeatureNorm;
    private final double localRewardBound;
    // The experiment it was issued in, as the C struct holds it: "" for "default".
    private final String experiment;

    // Called from the JNI code only.
    Assignment(byte[] id, int arm, int mechanism, double epsilon, double kappa, long expiresAtMs,
            double propensity, long policyVersion, int localD, double localDelta,
            double localFeatureNorm, double localRewardBound, String experiment) {
        this.id = id;
        this.arm = arm;
        this.mechanism = mechanism;
        this.epsilon = epsilon;
        this.kappa = kappa;
        this.expiresAtMs = expiresAtMs;
        this.propensity = propensity;
        this.policyVersion = policyVersion;
        this.localD = localD;
        this.localDelta = localDelta;
        this.localFeatureNorm = localFeatureNorm;
        this.localRewardBound = localRewardBound;
        this.experiment = experiment;
    }

    /** The aggregator's opaque id (a copy). */
    public byte[] id() {
        return id.clone();
    }

    /** The variant to use. */
    public int arm() {
        return arm;
    }

    public MechanismKind mechanism() {
        return MechanismKind.of(mechanism);
    }

    /** Per-report epsilon; 0 for RAW. */
    public double epsilon() {
        return epsilon;
    }

    /** QUADRATIC's curvature; 0 for the other mechanisms. */
    public double kappa() {
        return kappa;
    }

    /** Expiry, ms since the Unix epoch on the aggregator's clock. */
    public long expiresAtMs() {
        return expiresAtMs;
    }

    /** Probability the policy chose this arm, (0, 1]. */
    public double propensity() {
        return propensity;
    }

    /** 0 if the aggregator sent none. */
    public long policyVersion() {
        return policyVersion;
    }

    /** The experiment it was issued in ("default" unless one was named); its reports name it. */
    public String experiment() {
        return experiment.isEmpty() ? "default" : experiment;
    }

    @Override
    public String toString() {
        return "Assignment[arm " + Integer.toUnsignedString(arm) + ", " + mechanism()
                + ", epsilon " + epsilon + ", propensity " + propensity + ", experiment "
                + experiment() + "]";
    }
}
