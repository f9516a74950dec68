package org.ldpb;

import java.util.Objects;

/**
 * The options of a {@link Client} ({@code ldpb_client_opts}); defaults as
 * {@code ldpb_client_opts_init}. The C library validates the values when the client is created
 * (an out-of-range value is an {@link LdpbException} with {@link LdpbError#ERANGE}); the setters
 * refuse only what cannot be passed to C at all (null, NaN, a key of the wrong length).
 */
public final class ClientOptions {
    /** Bytes of an X25519 key. */
    public static final int KEY_BYTES = 32;

    String serverUrl;
    byte[] serverPublicKey;
    String serverKeyFile;
    byte[] clientSecretKey;
    String clientSecretKeyFile;
    String ledgerPath;
    String queuePath;
    boolean queueInMemory;
    double lifetimeBudget = Double.NaN; // NaN: the C default
    double perReportCap = Double.NaN;
    double epsilonCap = Double.NaN;
    double rewardLo = Double.NaN;
    double rewardHi = Double.NaN;
    double lifetimeDelta = Double.NaN;
    double perReportDeltaCap = Double.NaN;
    boolean allowRaw;
    int timeoutMs; // 0: the C default
    int maxAttempts;

    /** The aggregator's endpoint, "tcp://host:port" or "ipc://path". Required. */
    public ClientOptions serverUrl(String url) {
        this.serverUrl = Objects.requireNonNull(url, "url");
        return this;
    }

    /** The aggregator's pinned public key, 32 bytes (or {@link #serverKeyFile}). */
    public ClientOptions serverPublicKey(byte[] key) {
        this.serverPublicKey = checkKey(key, "server public key");
        this.serverKeyFile = null;
        return this;
    }

    /** Reads the pinned key from the aggregator.pub file `ldpb keygen` wrote, at creation. */
    public ClientOptions serverKeyFile(String path) {
        this.serverKeyFile = Objects.requireNonNull(path, "path");
        this.serverPublicKey = null;
        return this;
    }

    /** A persistent client secret key, 32 bytes, for allow-list deployments (copied). */
    public ClientOptions clientSecretKey(byte[] key) {
        this.clientSecretKey = checkKey(key, "client secret key");
        this.clientSecretKeyFile = null;
        return this;
    }

    /** Reads the persistent client secret key from a client.key file (owner-only) at creation. */
    public ClientOptions clientSecretKeyFile(String path) {
        this.clientSecretKeyFile = Objects.requireNonNull(path, "path");
        this.clientSecretKey = null;
        return this;
    }

    /**
     * The device's privacy ledger file, created if missing; in app storage (docs/java.md). Null
     * (the default) keeps the ledger in memory: for simulations only.
     */
    public ClientOptions ledgerPath(String path) {
        this.ledgerPath = path;
        return this;
    }

    /** The report queue file (docs/client.md, "The report queue"); null: no queue. */
    public ClientOptions queuePath(String path) {
        this.queuePath = path;
        return this;
    }

    /** A queue in memory only (simulations). */
    public ClientOptions queueInMemory(boolean on) {
        this.queueInMemory = on;
        return this;
    }

    /** Used when the ledger is created. */
    public ClientOptions lifetimeBudget(double v) {
        this.lifetimeBudget = finite(v, "lifetime budget");
        return this;
    }

    /** Used when the ledger is created. */
    public ClientOptions perReportCap(double v) {
        this.perReportCap = finite(v, "per-report cap");
        return this;
    }

    /** The largest per-report epsilon this client accepts. */
    public ClientOptions epsilonCap(double v) {
        this.epsilonCap = finite(v, "epsilon cap");
        return this;
    }

    /** The app's reward range, rescaled to [0, 1] and clipped on the device. */
    public ClientOptions rewardRange(double lo, double hi) {
        this.rewardLo = finite(lo, "reward_lo");
        this.rewardHi = finite(hi, "reward_hi");
        return this;
    }

    /** The ledger's delta budget (local contextual mode). */
    public ClientOptions deltaBudget(double lifetime, double perReportCap) {
        this.lifetimeDelta = finite(lifetime, "lifetime delta");
        this.perReportDeltaCap = finite(perReportCap, "per-report delta cap");
        return this;
    }

    /** Accept RAW (central / non-private) assignments: the aggregator then sees the reward. */
    public ClientOptions allowRaw(boolean on) {
        this.allowRaw = on;
        return this;
    }

    /** How long one attempt waits for its reply, ms (positive). */
    public ClientOptions timeoutMs(int ms) {
        if (ms <= 0)
            throw new IllegalArgumentException("timeoutMs must be positive: " + ms);
        this.timeoutMs = ms;
        return this;
    }

    /** Attempts per call (positive). */
    public ClientOptions maxAttempts(int n) {
        if (n <= 0)
            throw new IllegalArgumentException("maxAttempts must be positive: " + n);
        this.maxAttempts = n;
        return this;
    }

    private static byte[] checkKey(byte[] key, String what) {
        Objects.requireNonNull(key, what);
        if (key.length != KEY_BYTES)
            throw new IllegalArgumentException(
                    what + " must be " + KEY_BYTES + " bytes, not " + key.length);
        return key.clone();
    }

    static double finite(double v, String what) {
        if (!Double.isFinite(v))
            throw new IllegalArgumentException(what + " must be finite: " + v);
        return v;
    }
}
