package org.ldpb;

import java.util.Objects;
import java.util.OptionalDouble;

/**
 * The client of one device ({@code ldpb_client}, docs/client.md and docs/java.md): ask the
 * aggregator which arm to use ({@link #assign}), act on it, observe the reward, and report it
 * ({@link #report}). Every privacy decision is the C library's: it rescales, clips and privatizes
 * the reward with the assignment's mechanism, charges the ledger durably before anything is
 * released, refuses what the cap or the budget does not allow, and resends the stored value on a
 * retry. This class only passes arguments and results across.
 *
 * <p>Calls block on the network (up to timeoutMs x maxAttempts): never call them on an app's UI
 * thread. The methods are synchronized, so one handle may be shared by threads (the calls are
 * then serialized); {@link #close} waits for a call in progress. After close every method throws
 * {@link IllegalStateException}.
 */
public final class Client implements AutoCloseable {
    /** Values in a context vector at most ({@code LDPB_CLIENT_CONTEXT_MAX}). */
    public static final int CONTEXT_MAX = 256;
    /** Reports per batch frame at most ({@code LDPB_CLIENT_BATCH_MAX}). */
    public static final int BATCH_MAX = 512;

    static {
        NativeLibrary.load();
    }

    private long handle;

    /**
     * Validates the options, opens (or creates) the ledger and connects (in the background: a
     * missing aggregator shows up as {@link LdpbError#ETIMEDOUT} on the first call).
     *
     * @throws LdpbException the C library's refusal: an option out of range, a ledger that cannot
     *     be opened (EIO, ECORRUPT, ESTATE if another handle holds it), a bad key file
     */
    public Client(ClientOptions o) throws LdpbException {
        Objects.requireNonNull(o, "options");
        if (o.serverUrl == null)
            throw new IllegalArgumentException("serverUrl is required");
        if (o.serverPublicKey == null && o.serverKeyFile == null)
            throw new IllegalArgumentException("serverPublicKey or serverKeyFile is required");
        double[] d = {o.lifetimeBudget, o.perReportCap, o.epsilonCap, o.rewardLo, o.rewardHi,
                o.lifetimeDelta, o.perReportDeltaCap};
        int[] n = {o.timeoutMs, o.maxAttempts, o.allowRaw ? 1 : 0, o.queueInMemory ? 1 : 0};
        handle = nativeNew(o.serverUrl, o.serverPublicKey, o.serverKeyFile, o.clientSecretKey,
                o.clientSecretKeyFile, o.ledgerPath, o.queuePath, d, n);
    }

    /** Asks for an assignment without a context vector. Spends nothing. */
    public Assignment assign() throws LdpbException {
        return assign(null);
    }

    /**
     * Asks for an assignment (context: null or at most {@link #CONTEXT_MAX} finite values).
     * Spends nothing; refused before the app acts on it with {@link LdpbError#EBUDGET} (above
     * the cap, RAW without allowRaw, more than the ledger allows).
     */
    public synchronized Assignment assign(double[] context) throws LdpbException {
        checkContext(context);
        return nativeAssign(open(), null, context);
    }

    /**
     * As {@link #assign(double[])}, in experiment {@code experiment} (null or "default": the
     * experiment "default", with nothing on the wire; otherwise 1 to 64 bytes of a-z, 0-9, '.',
     * '_', '-', else {@link LdpbError#EINVAL}). The assignment remembers it and its reports name
     * it. The ledger is one budget across every experiment. An aggregator that runs no such
     * experiment answers {@link LdpbError#ENOEXPERIMENT} (not retried).
     */
    public synchronized Assignment assign(String experiment, double[] context)
            throws LdpbException {
        checkContext(context);
        return nativeAssign(open(), experiment, context);
    }

    /**
     * Privatizes {@code reward} for {@code a} through the ledger, sends it and waits for the ack.
     * On {@link LdpbError#ETIMEDOUT} the spend stands: report again later, and the same value is
     * resent (the reward given then is ignored).
     */
    public synchronized void report(Assignment a, double reward) throws LdpbException {
        Objects.requireNonNull(a, "assignment");
        ClientOptions.finite(reward, "reward");
        nativeReport(open(), a, reward);
    }

    /**
     * Reports as {@link #report} and asks for the next assignment in the same round trip. If the
     * report was acknowledged but no next assignment came, the exception's
     * {@link LdpbException#reportAcked()} is true.
     */
    public synchronized Assignment reportAndAssign(Assignment a, double reward, double[] context)
            throws LdpbException {
        Objects.requireNonNull(a, "assignment");
        ClientOptions.finite(reward, "reward");
        checkContext(context);
        return nativeReportAndAssign(open(), a, reward, context);
    }

    /** Privatizes and charges as {@link #report}, and queues the report for {@link #flush}. */
    public synchronized void queueReport(Assignment a, double reward) throws LdpbException {
        Objects.requireNonNull(a, "assignment");
        ClientOptions.finite(reward, "reward");
        nativeQueueReport(open(), a, reward);
    }

    /** Sends the queued reports in frames of at most maxBatch (0: {@link #BATCH_MAX}). */
    public synchronized FlushStats flush(int maxBatch) throws LdpbException {
        if (maxBatch < 0 || maxBatch > BATCH_MAX)
            throw new IllegalArgumentException("maxBatch must be in [0, " + BATCH_MAX + "]");
        return nativeFlush(open(), maxBatch);
    }

    /** Reports waiting in the queue. */
    public synchronized long queued() {
        return nativeQueued(open());
    }

    /** The aggregator's status. Spends nothing. */
    public synchronized Status status() throws LdpbException {
        return nativeStatus(open(), null);
    }

    /** The status of experiment {@code experiment} (null or "default": as {@link #status()}). */
    public synchronized Status status(String experiment) throws LdpbException {
        return nativeStatus(open(), experiment);
    }

    /** Epsilon this device's ledger has spent. */
    public synchronized double ledgerSpent() {
        return nativeLedger(open(), 0);
    }

    /** What remains of the ledger's lifetime budget. */
    public synchronized double ledgerRemaining() {
        return nativeLedger(open(), 1);
    }

    /**
     * The privatized value the ledger released for {@code a} (what every report of it sends),
     * or empty if nothing was released for it yet.
     */
    public synchronized OptionalDouble ledgerValue(Assignment a) {
        Objects.requireNonNull(a, "assignment");
        double[] out = new double[1];
        return nativeLedgerValue(open(), a, out) ? OptionalDouble.of(out[0]) : OptionalDouble.empty();
    }

    /** This client's public key (32 bytes), e.g. for an operator's allow-list. */
    public synchronized byte[] publicKey() {
        return nativePublicKey(open());
    }

    /** Closes the socket and the ledger and wipes the keys. Idempotent. */
    @Override
    public synchronized void close() {
        long h = handle;
        handle = 0;
        if (h != 0)
            nativeFree(h);
    }

    private long open() {
        if (handle == 0)
            throw new IllegalStateException("the client is closed");
        return handle;
    }

    private static void checkContext(double[] context) {
        if (context == null)
            return;
        if (context.length > CONTEXT_MAX)
            throw new IllegalArgumentException(
                    "context has " + context.length + " values, at most " + CONTEXT_MAX);
        for (double v : context)
            if (!Double.isFinite(v))
                throw new IllegalArgumentException("context values must be finite: " + v);
    }

    private static native long nativeNew(String url, byte[] serverKey, String serverKeyFile,
            byte[] secretKey, String secretKeyFile, String ledgerPath, String queuePath,
            double[] doubles, int[] ints) throws LdpbException;

    private static native Assignment nativeAssign(long h, String experiment, double[] context)
            throws LdpbException;

    private static native void nativeReport(long h, Assignment a, double reward)
            throws LdpbException;

    private static native Assignment nativeReportAndAssign(long h, Assignment a, double reward,
            double[] context) throws LdpbException;

    private static native void nativeQueueReport(long h, Assignment a, double reward)
            throws LdpbException;

    private static native FlushStats nativeFlush(long h, int maxBatch) throws LdpbException;

    private static native long nativeQueued(long h);

    private static native Status nativeStatus(long h, String experiment) throws LdpbException;

    private static native double nativeLedger(long h, int which);

    private static native boolean nativeLedgerValue(long h, Assignment a, double[] out);

    private static native byte[] nativePublicKey(long h);

    private static native void nativeFree(long h);
}
