package org.ldpb;

/**
 * Loads libldpb_jni: from the absolute path in the system property {@code ldpb.jni.library} if
 * set (tests, a build tree), else {@code System.loadLibrary("ldpb_jni")} (java.library.path; on
 * Android the APK's lib/ABI directory).
 */
final class NativeLibrary {
    private NativeLibrary() {}

    private static boolean loaded;

    static synchronized void load() {
        if (loaded)
            return;
        String path = System.getProperty("ldpb.jni.library");
        if (path != null && !path.isEmpty())
            System.load(path);
        else
            System.loadLibrary("ldpb_jni");
        loaded = true;
    }
}
