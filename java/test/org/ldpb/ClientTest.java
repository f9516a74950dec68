package org.ldpb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.OptionalDouble;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java binding against the real ldpb-aggregator over tcp://127.0.0.1 (the paths of the daemon
 * and of the ldpb tool come in the system properties ldpb.aggregator and ldpb.tool; the JNI
 * library in ldpb.jni.library). The daemon runs ldp-ucb-l with the Laplace mechanism at epsilon
 * 1 on 3 arms, so a report's privatized value is a real number that identifies the draw.
 */
class ClientTest {
    @TempDir
    Path dir;

    private Process daemon;
    private String url;

    private static String prop(String name) {
        String v = System.getProperty(name);
        if (v == null || v.isEmpty())
            throw new IllegalStateException("system property " + name + " is not set");
        return v;
    }

    /* A free port outside the kernel's ephemeral range (tests/support/free_port.py says why: a
     * port from a bind to port 0 may be taken by another process's connection before the daemon
     * binds it, or while it restarts on it). */
    private static int freePort() throws IOException {
        int lo = 32768, hi = 60999;
        try {
            String[] r = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim()
                    .split("\\s+");
            lo = Integer.parseInt(r[0]);
            hi = Integer.parseInt(r[1]);
        } catch (IOException | RuntimeException e) {
            // the defaults above
        }
        int first = lo - 10000 >= 1000 ? 10000 : hi + 1;
        int count = lo - 10000 >= 1000 ? lo - 10000 : 65535 - hi;
        SecureRandom rng = new SecureRandom();
        for (int i = 0; i < 200; i++) {
            int port = first + rng.nextInt(count);
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                return port;
            } catch (IOException e) {
                // taken: draw again
            }
        }
        throw new IOException("no free port outside the ephemeral range");
    }

    @BeforeEach
    void keys() throws Exception {
        Process p = new ProcessBuilder(prop("ldpb.tool"), "keygen", "--out", dir.resolve("keys").toString())
                .redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor(), "ldpb keygen");
        url = "tcp://127.0.0.1:" + freePort();
    }

    @AfterEach
    void stopDaemon() throws Exception {
        if (daemon != null) {
            daemon.destroyForcibly();
            daemon.waitFor();
        }
    }

    private void startDaemon() throws Exception {
        daemon = new ProcessBuilder(prop("ldpb.aggregator"), "--listen", url, "--state-dir",
                dir.resolve("state").toString(), "--key", dir.resolve("keys/aggregator.key").toString(),
                "--arms", "3", "--policy", "ldp-ucb-l", "--mechanism", "laplace", "--epsilon", "1",
                "--log-level", "warn")
                .redirectErrorStream(true).redirectOutput(dir.resolve("daemon.log").toFile()).start();
        try (Client probe = new Client(options().timeoutMs(200).maxAttempts(1))) {
            for (int i = 0;; i++) {
                try {
                    probe.status();
                    return;
                } catch (LdpbException e) {
                    assertTrue(daemon.isAlive(), "ldpb-aggregator exited: " + log());
                    if (i == 100)
                        throw new AssertionError("ldpb-aggregator not answering: " + log(), e);
                }
            }
        }
    }

    /** SIGTERM: the daemon drains and must exit 0. */
    private void stopDaemonCleanly() throws Exception {
        daemon.destroy();
        assertTrue(daemon.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, daemon.exitValue(), "ldpb-aggregator after SIGTERM: " + log());
        daemon = null;
    }

    private String log() throws IOException {
        Path p = dir.resolve("daemon.log");
        return Files.exists(p) ? Files.readString(p) : "";
    }

    private ClientOptions options() {
        return new ClientOptions().serverUrl(url).serverKeyFile(dir.resolve("keys/aggregator.pub").toString())
                .epsilonCap(2.0).perReportCap(2.0).lifetimeBudget(50.0).timeoutMs(2000);
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b)
            s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    /** The value column of the daemon's CSV export for the assignment, or null if none. */
    private String exportedValue(Assignment a) throws Exception {
        Process p = new ProcessBuilder(prop("ldpb.aggregator"), "--export-csv", "-", "--state-dir",
                dir.resolve("state").toString()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String csv = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "export");
        String[] lines = csv.split("\n");
        String[] header = lines[0].split(",", -1);
        int idCol = java.util.Arrays.asList(header).indexOf("assignment_id");
        int valueCol = java.util.Arrays.asList(header).indexOf("value");
        for (String line : lines) {
            String[] f = line.split(",", -1);
            if (f[idCol].equalsIgnoreCase(hex(a.id())))
                return f[valueCol];
        }
        return null;
    }

    /**
     * An assignment from a handle of its own with the default timeout (a loaded machine may take
     * longer than the short timeout the tests then give the handle that must time out); an
     * assignment is a plain value that any handle may report.
     */
    private Assignment assignOnce() throws LdpbException {
        try (Client c = new Client(options())) {
            return c.assign();
        }
    }

    @Test
    void assignReportAndStatus() throws Exception {
        startDaemon();
        try (Client c = new Client(options().ledgerPath(dir.resolve("device.ledger").toString()))) {
            Assignment a = c.assign(new double[] {1.0, 0.25});
            assertTrue(a.arm() >= 0 && a.arm() < 3);
            assertEquals(MechanismKind.LAPLACE, a.mechanism());
            assertEquals(1.0, a.epsilon());
            assertFalse(c.ledgerValue(a).isPresent(), "nothing released before the report");
            c.report(a, 0.7);
            assertTrue(c.ledgerValue(a).isPresent());
            double spent = c.ledgerSpent();
            assertTrue(spent > 0.99 && spent <= 1.0, "spent " + spent);
            assertEquals(50.0 - spent, c.ledgerRemaining(), 1e-12);

            Assignment next = c.reportAndAssign(c.assign(), 0.2, null);
            assertNotNull(next);
            assertEquals("default", next.experiment());
            // The experiment "default" named: the same request, nothing on the wire.
            Assignment named = c.assign("default", null);
            assertEquals("default", named.experiment());
            assertEquals("default", c.status("default").experiment);
            LdpbException bad = assertThrows(LdpbException.class, () -> c.assign("Not A Name", null));
            assertEquals(LdpbError.EINVAL, bad.error());
            assertTrue(bad.detail().contains("not an experiment name"), bad.detail());
            assertEquals(LdpbError.EINVAL,
                    assertThrows(LdpbException.class, () -> c.status("a/b")).error());
            Status st = c.status();
            assertEquals("default", st.experiment);
            assertEquals("ldp-ucb-l", st.policy);
            assertEquals("local", st.model);
            assertEquals(2, st.reports);
            assertEquals(3, st.arms.size());
            assertEquals(32, c.publicKey().length);
        }
        stopDaemonCleanly();
    }

    /**
     * A report that got no answer keeps its spend, and the retry, from a new handle after a
     * restart and with another reward, sends the value the ledger released the first time: the
     * daemon's store holds exactly it, and the ledger charged once.
     */
    @Test
    void retrySendsTheSameValue() throws Exception {
        startDaemon();
        String ledger = dir.resolve("device.ledger").toString();
        Assignment a = assignOnce();
        double first;
        double spent;
        stopDaemonCleanly();
        try (Client c = new Client(options().ledgerPath(ledger).timeoutMs(300).maxAttempts(1))) {
            LdpbException e = assertThrows(LdpbException.class, () -> c.report(a, 0.9));
            assertEquals(LdpbError.ETIMEDOUT, e.error());
            OptionalDouble v = c.ledgerValue(a);
            assertTrue(v.isPresent(), "the spend stands after a timeout");
            first = v.getAsDouble();
            spent = c.ledgerSpent();
        }
        startDaemon();
        try (Client c = new Client(options().ledgerPath(ledger))) {
            c.report(a, 0.1); // another reward: ignored, the stored value is resent
            assertEquals(spent, c.ledgerSpent(), "charged once");
            assertEquals(first, c.ledgerValue(a).getAsDouble());
            c.report(a, 0.5); // acknowledged again as a duplicate
            assertEquals(1, c.status().reports);
        }
        stopDaemonCleanly();
        String exported = exportedValue(a);
        assertNotNull(exported, "the daemon stored the report");
        assertEquals(first, Double.parseDouble(exported), "the daemon got the first draw");
    }

    /** The queue: a report queued while the daemon is away goes out with flush, value unchanged. */
    @Test
    void queueAndFlush() throws Exception {
        startDaemon();
        double value;
        String ledger = dir.resolve("device.ledger").toString();
        String queue = dir.resolve("device.queue").toString();
        Assignment a = assignOnce();
        stopDaemonCleanly();
        try (Client c = new Client(options().ledgerPath(ledger).queuePath(queue).timeoutMs(300).maxAttempts(1))) {
            c.queueReport(a, 0.4);
            assertEquals(1, c.queued());
            value = c.ledgerValue(a).getAsDouble();
            assertEquals(LdpbError.ETIMEDOUT, assertThrows(LdpbException.class, () -> c.flush(0)).error());
            assertEquals(1, c.queued());
        }
        startDaemon();
        try (Client c = new Client(options().ledgerPath(ledger).queuePath(queue))) {
            FlushStats fs = c.flush(0);
            assertEquals(1, fs.acked);
            assertEquals(0, fs.left);
            assertEquals(0, c.queued());
        }
        stopDaemonCleanly();
        assertEquals(value, Double.parseDouble(exportedValue(a)));
    }

    @Test
    void refusalsCarryTheCodeAndDetail() throws Exception {
        startDaemon();
        try (Client c = new Client(options().epsilonCap(0.5))) {
            LdpbException e = assertThrows(LdpbException.class, () -> c.assign());
            assertEquals(LdpbError.EBUDGET, e.error());
            assertEquals(9, e.code());
            assertFalse(e.detail().isEmpty());
            assertTrue(e.getMessage().startsWith("LDPB_EBUDGET: "), e.getMessage());
        }
        // A ledger that cannot be opened: the C library's code and the OS's reason.
        String bad = dir.resolve("no/such/dir/device.ledger").toString();
        LdpbException e = assertThrows(LdpbException.class, () -> new Client(options().ledgerPath(bad)));
        assertEquals(LdpbError.EIO, e.error());
        assertTrue(e.detail().contains(bad) && e.detail().contains("No such file or directory"),
                e.detail());
        // An out-of-range option is the C library's ERANGE.
        assertEquals(LdpbError.ERANGE,
                assertThrows(LdpbException.class, () -> new Client(options().epsilonCap(11.0))).error());
        // A missing key file.
        assertEquals(LdpbError.EIO, assertThrows(LdpbException.class,
                () -> new Client(options().serverKeyFile(dir.resolve("nope.pub").toString()))).error());
        stopDaemonCleanly();
    }

    /** Bad input from Java is refused before any C call, never a JVM crash. */
    @Test
    void badInputIsRefusedInJava() throws Exception {
        Client c = new Client(options().timeoutMs(100).maxAttempts(1)); // no daemon needed
        Assignment forged = null;
        assertThrows(NullPointerException.class, () -> c.report(forged, 0.5));
        assertThrows(NullPointerException.class, () -> new Client(null));
        assertThrows(IllegalArgumentException.class, () -> c.assign(new double[Client.CONTEXT_MAX + 1]));
        assertThrows(IllegalArgumentException.class, () -> c.assign(new double[] {Double.NaN}));
        assertThrows(IllegalArgumentException.class, () -> c.flush(Client.BATCH_MAX + 1));
        assertThrows(IllegalArgumentException.class, () -> new ClientOptions().serverPublicKey(new byte[31]));
        assertThrows(IllegalArgumentException.class, () -> new ClientOptions().clientSecretKey(new byte[33]));
        assertThrows(IllegalArgumentException.class, () -> new ClientOptions().epsilonCap(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> new Client(new ClientOptions().serverKeyFile("x")));
        assertThrows(IllegalArgumentException.class, () -> new Client(new ClientOptions().serverUrl(url)));
        // A reward of NaN never reaches the ledger, even with an assignment in hand.
        startDaemon();
        Client live = new Client(options());
        try {
            Assignment a = live.assign();
            assertThrows(IllegalArgumentException.class, () -> live.report(a, Double.NaN));
            assertThrows(IllegalArgumentException.class, () -> live.report(a, Double.POSITIVE_INFINITY));
            assertThrows(IllegalArgumentException.class, () -> live.reportAndAssign(a, Double.NaN, null));
            assertThrows(IllegalArgumentException.class, () -> live.queueReport(a, Double.NaN));
            assertEquals(0.0, live.ledgerSpent());
            assertFalse(live.ledgerValue(a).isPresent());
            // Assignment ids are copies: changing one changes nothing.
            byte[] id = a.id();
            id[0] ^= 1;
            assertFalse(java.util.Arrays.equals(id, a.id()));
            live.close();
            live.close(); // idempotent
            assertThrows(IllegalStateException.class, () -> live.report(a, 0.5));
            assertThrows(IllegalStateException.class, () -> live.assign());
            assertThrows(IllegalStateException.class, live::status);
            assertThrows(IllegalStateException.class, live::ledgerSpent);
        } finally {
            live.close();
        }
        c.close();
        assertThrows(IllegalStateException.class, c::queued);
        stopDaemonCleanly();
    }

    @Test
    void mechanisms() throws Exception {
        try (Mechanism m = new Mechanism(MechanismKind.LINEAR, 1.0)) {
            double eff = m.epsilonEffective();
            assertTrue(eff > 0.99 && eff <= 1.0, "effective epsilon " + eff);
            assertEquals(1.0, m.epsilon());
            int ones = 0;
            for (int i = 0; i < 2000; i++) {
                double v = m.privatize(1.0);
                assertTrue(v == 0.0 || v == 1.0);
                ones += (int) v;
            }
            // P(1 | x = 1) = e/(e+1) = 0.731; 2000 draws: sd 0.0099, so [0.66, 0.80] fails with
            // probability below 1e-11.
            assertTrue(ones > 1320 && ones < 1600, "ones " + ones);
        }
        Mechanism lap = new Mechanism(MechanismKind.LAPLACE, 0.5, Double.NaN, 1.0, 5.0);
        assertTrue(Double.isFinite(lap.privatize(3.0)));
        assertThrows(IllegalArgumentException.class, () -> lap.privatize(Double.NaN));
        lap.close();
        assertThrows(IllegalStateException.class, () -> lap.privatize(3.0));
        assertEquals(LdpbError.ERANGE,
                assertThrows(LdpbException.class, () -> new Mechanism(MechanismKind.LINEAR, 20.0)).error());
        assertEquals(LdpbError.ERANGE, assertThrows(LdpbException.class,
                () -> new Mechanism(MechanismKind.QUADRATIC, 1.0, 2.0, 0.0, 1.0)).error());
        assertThrows(IllegalArgumentException.class, () -> new Mechanism(MechanismKind.RAW, 1.0));
        assertThrows(NullPointerException.class, () -> new Mechanism(null, 1.0));
    }

    /** The enum against the C library's names: same number, same name, for every code. */
    @Test
    void errorCodesMatchTheCLibrary() {
        for (LdpbError e : LdpbError.values())
            if (e != LdpbError.UNKNOWN)
                assertEquals("LDPB_" + (e == LdpbError.OK ? "OK" : e.name()), LdpbError.cName(e.code()));
        // The first code past the enum (values() ends with UNKNOWN): unknown on both sides, so
        // the C library has no code this binding lacks.
        int next = LdpbError.values().length - 1;
        assertEquals(LdpbError.UNKNOWN, LdpbError.of(next));
        assertEquals("LDPB_EUNKNOWN", LdpbError.cName(next));
    }
}
