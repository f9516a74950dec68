/* The JNI half of the Java binding (java/src/org/ldpb, docs/java.md): it converts arguments and
 * results and turns an ldpb_err into an org.ldpb.LdpbException, nothing more. Every charge, draw
 * and retry rule stays in the client library; the Java classes have already refused null
 * handles, closed handles, wrong lengths and non-finite numbers, and this file checks again
 * whatever would otherwise reach C as undefined behaviour (an id of a forged Assignment, a
 * missing array), throwing instead of crashing the JVM.
 *
 * Strings from C that may carry bytes from the network (ldpb_client_errmsg, a status's policy
 * and model) are passed to NewStringUTF as printable ASCII only: other bytes become '?', since
 * invalid modified UTF-8 there is undefined behaviour in the JVM. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jni.h>
#include <sodium.h>

#include "ldpb/ldpb.h"
#include "org_ldpb_Client.h"
#include "org_ldpb_LdpbError.h"
#include "org_ldpb_Mechanism.h"

#define MSG_BYTES 512

/* ---- helpers ------------------------------------------------------------------------------- */

static void ascii_copy(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[i] = '\0';
}

static jstring ascii_string(JNIEnv *env, const char *s)
{
    char buf[LDPB_CLIENT_STATUS_STRING_MAX + 1];
    ascii_copy(buf, sizeof buf, s);
    return (*env)->NewStringUTF(env, buf);
}

static void throw_java(JNIEnv *env, const char *cls, const char *msg)
{
    jclass c = (*env)->FindClass(env, cls);
    if (c)
        (*env)->ThrowNew(env, c, msg);
}

/* Throws org.ldpb.LdpbException(code, name, sentence, detail, reportAcked). */
static void throw_ldpb(JNIEnv *env, ldpb_err err, const char *detail, int acked)
{
    jclass c = (*env)->FindClass(env, "org/ldpb/LdpbException");
    if (!c)
        return;
    jmethodID ctor = (*env)->GetMethodID(
        env, c, "<init>", "(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;Z)V");
    if (!ctor)
        return;
    jstring name = (*env)->NewStringUTF(env, ldpb_errname(err));
    jstring sentence = (*env)->NewStringUTF(env, ldpb_strerror(err));
    jstring det = ascii_string(env, detail ? detail : "");
    if (!name || !sentence || !det)
        return; /* an OutOfMemoryError is pending */
    jobject e = (*env)->NewObject(env, c, ctor, (jint)err, name, sentence, det,
                                  acked ? JNI_TRUE : JNI_FALSE);
    if (e)
        (*env)->Throw(env, (jthrowable)e);
}

static ldpb_client *client_of(jlong h)
{
    return (ldpb_client *)(intptr_t)h;
}

/* The C string of a Java string, or NULL for null (and on failure, with an exception pending:
 * *failed set). Release with release_utf. */
static const char *utf_or_null(JNIEnv *env, jstring s, int *failed)
{
    if (!s)
        return NULL;
    const char *p = (*env)->GetStringUTFChars(env, s, NULL);
    if (!p)
        *failed = 1;
    return p;
}

static void release_utf(JNIEnv *env, jstring s, const char *p)
{
    if (s && p)
        (*env)->ReleaseStringUTFChars(env, s, p);
}

/* Copies a double[] (NULL for null) into a malloc'd buffer; *n its length. 0 on success. */
static int doubles_of(JNIEnv *env, jdoubleArray arr, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!arr)
        return 0;
    jsize len = (*env)->GetArrayLength(env, arr);
    if (len > (jsize)LDPB_CLIENT_CONTEXT_MAX) {
        throw_java(env, "java/lang/IllegalArgumentException", "context too long");
        return -1;
    }
    if (len == 0)
        return 0;
    *out = malloc((size_t)len * sizeof **out);
    if (!*out) {
        throw_java(env, "java/lang/OutOfMemoryError", "context");
        return -1;
    }
    (*env)->GetDoubleArrayRegion(env, arr, 0, len, *out);
    *n = (size_t)len;
    return 0;
}

/* ---- Assignment <-> ldpb_assignment -------------------------------------------------------------
 */

static jfieldID field(JNIEnv *env, jclass c, const char *name, const char *sig)
{
    return (*env)->GetFieldID(env, c, name, sig);
}

/* Reads an org.ldpb.Assignment; 0 on success, -1 with an exception pending. */
static int assignment_from_java(JNIEnv *env, jobject o, ldpb_assignment *a)
{
    memset(a, 0, sizeof *a);
    if (!o) {
        throw_java(env, "java/lang/NullPointerException", "assignment");
        return -1;
    }
    jclass c = (*env)->GetObjectClass(env, o);
    jbyteArray id = (jbyteArray)(*env)->GetObjectField(env, o, field(env, c, "id", "[B"));
    jsize len = id ? (*env)->GetArrayLength(env, id) : 0;
    if (len < 1 || len > LDPB_ASSIGNMENT_ID_MAX) {
        throw_java(env, "java/lang/IllegalArgumentException", "not an assignment of the library");
        return -1;
    }
    (*env)->GetByteArrayRegion(env, id, 0, len, (jbyte *)a->id);
    a->id_len = (size_t)len;
    a->arm = (uint32_t)(*env)->GetIntField(env, o, field(env, c, "arm", "I"));
    a->mechanism = (ldpb_client_mech)(*env)->GetIntField(env, o, field(env, c, "mechanism", "I"));
    a->epsilon = (*env)->GetDoubleField(env, o, field(env, c, "epsilon", "D"));
    a->kappa = (*env)->GetDoubleField(env, o, field(env, c, "kappa", "D"));
    a->expires_at_ms = (uint64_t)(*env)->GetLongField(env, o, field(env, c, "expiresAtMs", "J"));
    a->propensity = (*env)->GetDoubleField(env, o, field(env, c, "propensity", "D"));
    a->policy_version = (uint64_t)(*env)->GetLongField(env, o, field(env, c, "policyVersion", "J"));
    a->local_d = (uint32_t)(*env)->GetIntField(env, o, field(env, c, "localD", "I"));
    a->local_delta = (*env)->GetDoubleField(env, o, field(env, c, "localDelta", "D"));
    a->local_feature_norm = (*env)->GetDoubleField(env, o, field(env, c, "localFeatureNorm", "D"));
    a->local_reward_bound = (*env)->GetDoubleField(env, o, field(env, c, "localRewardBound", "D"));
    jstring exp =
        (jstring)(*env)->GetObjectField(env, o, field(env, c, "experiment", "Ljava/lang/String;"));
    if (exp) {
        /* Only the library makes assignments, so this is at most a name; the client checks it. */
        jsize n = (*env)->GetStringUTFLength(env, exp);
        if (n > LDPB_EXPERIMENT_NAME_MAX) {
            throw_java(env, "java/lang/IllegalArgumentException",
                       "not an assignment of the library");
            return -1;
        }
        (*env)->GetStringUTFRegion(env, exp, 0, (*env)->GetStringLength(env, exp), a->experiment);
        a->experiment[n] = '\0';
    }
    return (*env)->ExceptionCheck(env) ? -1 : 0;
}

static jobject assignment_to_java(JNIEnv *env, const ldpb_assignment *a)
{
    jclass c = (*env)->FindClass(env, "org/ldpb/Assignment");
    if (!c)
        return NULL;
    jmethodID ctor = (*env)->GetMethodID(env, c, "<init>", "([BIIDDJDJIDDDLjava/lang/String;)V");
    jbyteArray id = (*env)->NewByteArray(env, (jsize)a->id_len);
    jstring exp = id ? ascii_string(env, a->experiment) : NULL;
    if (!ctor || !id || !exp)
        return NULL;
    (*env)->SetByteArrayRegion(env, id, 0, (jsize)a->id_len, (const jbyte *)a->id);
    return (*env)->NewObject(env, c, ctor, id, (jint)a->arm, (jint)a->mechanism, a->epsilon,
                             a->kappa, (jlong)a->expires_at_ms, a->propensity,
                             (jlong)a->policy_version, (jint)a->local_d, a->local_delta,
                             a->local_feature_norm, a->local_reward_bound, exp);
}

/* ---- Client ---------------------------------------------------------------------------------- */

/* Options from the Java arrays: doubles {lifetime_budget, per_report_cap, epsilon_cap,
 * reward_lo, reward_hi, lifetime_delta, per_report_delta_cap} (NaN: the C default), ints
 * {timeout_ms, max_attempts (0: default), allow_raw, queue_in_memory}. */
static int opts_numbers(JNIEnv *env, ldpb_client_opts *o, jdoubleArray doubles, jintArray ints)
{
    jdouble d[7];
    jint n[4];
    if (!doubles || !ints || (*env)->GetArrayLength(env, doubles) != 7 ||
        (*env)->GetArrayLength(env, ints) != 4) {
        throw_java(env, "java/lang/IllegalArgumentException", "option arrays");
        return -1;
    }
    (*env)->GetDoubleArrayRegion(env, doubles, 0, 7, d);
    (*env)->GetIntArrayRegion(env, ints, 0, 4, n);
    double *dst[7] = {&o->lifetime_budget,     &o->per_report_cap, &o->epsilon_cap,
                      &o->reward_lo,           &o->reward_hi,      &o->lifetime_delta,
                      &o->per_report_delta_cap};
    for (int i = 0; i < 7; i++)
        if (!isnan(d[i]))
            *dst[i] = d[i];
    if (n[0] > 0)
        o->timeout_ms = (uint32_t)n[0];
    if (n[1] > 0)
        o->max_attempts = (uint32_t)n[1];
    o->allow_raw = n[2] != 0;
    o->queue_in_memory = n[3] != 0;
    return 0;
}

/* Fills the keys: the server's from the array or the key file, the client's (into sk, *has_sk)
 * from the array or the key file. 0, or -1 with an exception pending. */
static int opts_keys(JNIEnv *env, ldpb_client_opts *o, jbyteArray server_key, jstring server_file,
                     jbyteArray secret, jstring secret_file, uint8_t sk[32], int *has_sk)
{
    int failed = 0;
    if (server_key) {
        if ((*env)->GetArrayLength(env, server_key) != LDPB_CLIENT_KEY_BYTES) {
            throw_java(env, "java/lang/IllegalArgumentException", "server key length");
            return -1;
        }
        (*env)->GetByteArrayRegion(env, server_key, 0, LDPB_CLIENT_KEY_BYTES,
                                   (jbyte *)o->server_public_key);
    } else if (server_file) {
        const char *p = utf_or_null(env, server_file, &failed);
        if (failed)
            return -1;
        ldpb_err err = ldpb_client_opts_load_server_key(o, p);
        char msg[MSG_BYTES];
        snprintf(msg, sizeof msg, "reading the server key file %s", p);
        release_utf(env, server_file, p);
        if (err) {
            throw_ldpb(env, err, msg, 0);
            return -1;
        }
    }
    if (secret) {
        if ((*env)->GetArrayLength(env, secret) != 32) {
            throw_java(env, "java/lang/IllegalArgumentException", "client secret key length");
            return -1;
        }
        (*env)->GetByteArrayRegion(env, secret, 0, 32, (jbyte *)sk);
        *has_sk = 1;
    } else if (secret_file) {
        const char *p = utf_or_null(env, secret_file, &failed);
        if (failed)
            return -1;
        ldpb_err err = ldpb_client_load_secret_key(p, sk);
        char msg[MSG_BYTES];
        snprintf(msg, sizeof msg, "reading the client key file %s", p);
        release_utf(env, secret_file, p);
        if (err) {
            throw_ldpb(env, err, msg, 0);
            return -1;
        }
        *has_sk = 1;
    }
    return 0;
}

JNIEXPORT jlong JNICALL Java_org_ldpb_Client_nativeNew(JNIEnv *env, jclass cls, jstring url,
                                                       jbyteArray server_key, jstring server_file,
                                                       jbyteArray secret, jstring secret_file,
                                                       jstring ledger, jstring queue,
                                                       jdoubleArray doubles, jintArray ints)
{
    (void)cls;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    uint8_t sk[32];
    int has_sk = 0;
    if (opts_numbers(env, &o, doubles, ints) ||
        opts_keys(env, &o, server_key, server_file, secret, secret_file, sk, &has_sk)) {
        sodium_memzero(sk, sizeof sk);
        return 0;
    }
    int failed = 0;
    const char *u = utf_or_null(env, url, &failed);
    const char *lp = utf_or_null(env, ledger, &failed);
    const char *qp = utf_or_null(env, queue, &failed);
    ldpb_client *c = NULL;
    if (!failed) {
        o.server_url = u;
        o.ledger_path = lp;
        o.queue_path = qp;
        o.client_secret_key = has_sk ? sk : NULL;
        errno = 0;
        ldpb_err err = ldpb_client_new(&c, &o);
        int os_err = errno;
        if (err) {
            /* ldpb_client_new has no handle to carry a message: say what it was given, and the
             * OS's reason for a file error (the ledger or the queue). */
            char msg[MSG_BYTES];
            int k = snprintf(msg, sizeof msg, "creating the client: ledger_path %s, queue_path %s",
                             lp ? lp : "(memory)", qp ? qp : "(none)");
            if (err == LDPB_EIO && os_err && k > 0 && (size_t)k < sizeof msg)
                snprintf(msg + k, sizeof msg - (size_t)k, ": %s", strerror(os_err));
            throw_ldpb(env, err, msg, 0);
        }
    }
    sodium_memzero(sk, sizeof sk);
    release_utf(env, url, u);
    release_utf(env, ledger, lp);
    release_utf(env, queue, qp);
    return (jlong)(intptr_t)c;
}

JNIEXPORT jobject JNICALL Java_org_ldpb_Client_nativeAssign(JNIEnv *env, jclass cls, jlong h,
                                                            jstring experiment,
                                                            jdoubleArray context)
{
    (void)cls;
    double *ctx;
    size_t n;
    if (doubles_of(env, context, &ctx, &n))
        return NULL;
    const char *exp = experiment ? (*env)->GetStringUTFChars(env, experiment, NULL) : NULL;
    if (experiment && !exp) {
        free(ctx);
        return NULL;
    }
    ldpb_assignment a;
    ldpb_err err = ldpb_client_assign_in(client_of(h), exp, ctx, n, &a);
    if (exp)
        (*env)->ReleaseStringUTFChars(env, experiment, exp);
    free(ctx);
    if (err) {
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), 0);
        return NULL;
    }
    return assignment_to_java(env, &a);
}

JNIEXPORT void JNICALL Java_org_ldpb_Client_nativeReport(JNIEnv *env, jclass cls, jlong h,
                                                         jobject ja, jdouble reward)
{
    (void)cls;
    ldpb_assignment a;
    if (assignment_from_java(env, ja, &a))
        return;
    ldpb_err err = ldpb_client_report(client_of(h), &a, reward);
    if (err)
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), 0);
}

JNIEXPORT jobject JNICALL Java_org_ldpb_Client_nativeReportAndAssign(JNIEnv *env, jclass cls,
                                                                     jlong h, jobject ja,
                                                                     jdouble reward,
                                                                     jdoubleArray context)
{
    (void)cls;
    ldpb_assignment a, next;
    double *ctx;
    size_t n;
    if (assignment_from_java(env, ja, &a) || doubles_of(env, context, &ctx, &n))
        return NULL;
    int acked = 0;
    ldpb_err err = ldpb_client_report_and_assign(client_of(h), &a, reward, ctx, n, &next, &acked);
    free(ctx);
    if (err) {
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), acked);
        return NULL;
    }
    return assignment_to_java(env, &next);
}

JNIEXPORT void JNICALL Java_org_ldpb_Client_nativeQueueReport(JNIEnv *env, jclass cls, jlong h,
                                                              jobject ja, jdouble reward)
{
    (void)cls;
    ldpb_assignment a;
    if (assignment_from_java(env, ja, &a))
        return;
    ldpb_err err = ldpb_client_queue_report(client_of(h), &a, reward);
    if (err)
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), 0);
}

JNIEXPORT jobject JNICALL Java_org_ldpb_Client_nativeFlush(JNIEnv *env, jclass cls, jlong h,
                                                           jint max_batch)
{
    (void)cls;
    ldpb_flush_stats st;
    memset(&st, 0, sizeof st);
    ldpb_err err = ldpb_client_flush(client_of(h), (size_t)max_batch, &st);
    if (err) {
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), 0);
        return NULL;
    }
    jclass c = (*env)->FindClass(env, "org/ldpb/FlushStats");
    jmethodID ctor = c ? (*env)->GetMethodID(env, c, "<init>", "(JJJJ)V") : NULL;
    if (!ctor)
        return NULL;
    return (*env)->NewObject(env, c, ctor, (jlong)st.acked, (jlong)st.duplicates, (jlong)st.refused,
                             (jlong)st.left);
}

JNIEXPORT jlong JNICALL Java_org_ldpb_Client_nativeQueued(JNIEnv *env, jclass cls, jlong h)
{
    (void)env;
    (void)cls;
    return (jlong)ldpb_client_queued(client_of(h));
}

static jobjectArray status_arms(JNIEnv *env, const ldpb_status *st)
{
    jclass c = (*env)->FindClass(env, "org/ldpb/Status$Arm");
    jmethodID ctor = c ? (*env)->GetMethodID(env, c, "<init>", "(IJZDZDDZZ)V") : NULL;
    jobjectArray arr = ctor ? (*env)->NewObjectArray(env, (jsize)st->n_arms, c, NULL) : NULL;
    if (!arr)
        return NULL;
    for (uint32_t i = 0; i < st->n_arms; i++) {
        const ldpb_arm_status *s = &st->arms[i];
        jobject o = (*env)->NewObject(env, c, ctor, (jint)s->arm, (jlong)s->pulls,
                                      (jboolean)(s->has_estimate != 0), s->estimate,
                                      (jboolean)(s->has_ci != 0), s->ci_low, s->ci_high,
                                      (jboolean)(s->has_active != 0), (jboolean)(s->active != 0));
        if (!o)
            return NULL;
        (*env)->SetObjectArrayElement(env, arr, (jsize)i, o);
        (*env)->DeleteLocalRef(env, o);
    }
    return arr;
}

JNIEXPORT jobject JNICALL Java_org_ldpb_Client_nativeStatus(JNIEnv *env, jclass cls, jlong h,
                                                            jstring experiment)
{
    (void)cls;
    ldpb_status st;
    const char *exp = experiment ? (*env)->GetStringUTFChars(env, experiment, NULL) : NULL;
    if (experiment && !exp)
        return NULL;
    ldpb_err err = ldpb_client_status_in(client_of(h), exp, &st);
    if (exp)
        (*env)->ReleaseStringUTFChars(env, experiment, exp);
    if (err) {
        throw_ldpb(env, err, ldpb_client_errmsg(client_of(h)), 0);
        return NULL;
    }
    jobject result = NULL;
    jclass c = (*env)->FindClass(env, "org/ldpb/Status");
    jmethodID ctor =
        c ? (*env)->GetMethodID(env, c, "<init>",
                                "(Ljava/lang/String;Ljava/lang/String;JJ[Lorg/ldpb/Status$Arm;"
                                "Ljava/lang/String;)V")
          : NULL;
    jstring policy = ctor ? ascii_string(env, st.policy) : NULL;
    jstring model = policy ? ascii_string(env, st.model) : NULL;
    jobjectArray arms = model ? status_arms(env, &st) : NULL;
    jstring exp_name = arms ? ascii_string(env, st.experiment) : NULL;
    if (exp_name)
        result = (*env)->NewObject(env, c, ctor, policy, model, (jlong)st.reports,
                                   (jlong)st.assignments, arms, exp_name);
    ldpb_status_clear(&st);
    return result;
}

JNIEXPORT jdouble JNICALL Java_org_ldpb_Client_nativeLedger(JNIEnv *env, jclass cls, jlong h,
                                                            jint which)
{
    (void)env;
    (void)cls;
    const ldpb_ledger *l = ldpb_client_ledger(client_of(h));
    return which == 0 ? ldpb_ledger_spent(l) : ldpb_ledger_remaining(l);
}

JNIEXPORT jboolean JNICALL Java_org_ldpb_Client_nativeLedgerValue(JNIEnv *env, jclass cls, jlong h,
                                                                  jobject ja, jdoubleArray out)
{
    (void)cls;
    ldpb_assignment a;
    if (assignment_from_java(env, ja, &a))
        return JNI_FALSE;
    ldpb_ledger_entry e;
    if (ldpb_ledger_lookup(ldpb_client_ledger(client_of(h)), a.id, a.id_len, &e) != LDPB_OK)
        return JNI_FALSE;
    jdouble v = e.value;
    (*env)->SetDoubleArrayRegion(env, out, 0, 1, &v);
    return JNI_TRUE;
}

JNIEXPORT jbyteArray JNICALL Java_org_ldpb_Client_nativePublicKey(JNIEnv *env, jclass cls, jlong h)
{
    (void)cls;
    uint8_t pk[LDPB_CLIENT_KEY_BYTES];
    ldpb_client_public_key(client_of(h), pk);
    jbyteArray arr = (*env)->NewByteArray(env, LDPB_CLIENT_KEY_BYTES);
    if (arr)
        (*env)->SetByteArrayRegion(env, arr, 0, LDPB_CLIENT_KEY_BYTES, (const jbyte *)pk);
    return arr;
}

JNIEXPORT void JNICALL Java_org_ldpb_Client_nativeFree(JNIEnv *env, jclass cls, jlong h)
{
    (void)env;
    (void)cls;
    ldpb_client_free(client_of(h));
}

/* ---- Mechanism ---------------------------------------------------------------------------------
 */

/* A mechanism with the system generator it draws from. */
typedef struct jmech {
    ldpb_mech *mech;
    ldpb_rng *rng;
} jmech;

static jmech *mech_of(jlong h)
{
    return (jmech *)(intptr_t)h;
}

JNIEXPORT jlong JNICALL Java_org_ldpb_Mechanism_nativeNew(JNIEnv *env, jclass cls, jint kind,
                                                          jdouble epsilon, jdouble kappa,
                                                          jdouble lo, jdouble hi)
{
    (void)cls;
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, (ldpb_mech_kind)kind, epsilon);
    if (!isnan(kappa))
        o.kappa = kappa;
    o.range_lo = lo;
    o.range_hi = hi;
    jmech *m = calloc(1, sizeof *m);
    if (!m) {
        throw_ldpb(env, LDPB_ENOMEM, "", 0);
        return 0;
    }
    ldpb_err err = ldpb_mech_new(&m->mech, &o);
    if (!err)
        err = ldpb_rng_new_system(&m->rng);
    if (err) {
        ldpb_mech_free(m->mech);
        free(m);
        throw_ldpb(env, err, "creating the mechanism", 0);
        return 0;
    }
    return (jlong)(intptr_t)m;
}

JNIEXPORT jdouble JNICALL Java_org_ldpb_Mechanism_nativePrivatize(JNIEnv *env, jclass cls, jlong h,
                                                                  jdouble reward)
{
    (void)cls;
    double out = 0.0;
    ldpb_err err = ldpb_mech_privatize(mech_of(h)->mech, mech_of(h)->rng, reward, &out);
    if (err)
        throw_ldpb(env, err, "privatizing", 0);
    return out;
}

JNIEXPORT jdouble JNICALL Java_org_ldpb_Mechanism_nativeEpsilon(JNIEnv *env, jclass cls, jlong h,
                                                                jboolean effective)
{
    (void)env;
    (void)cls;
    const ldpb_mech *m = mech_of(h)->mech;
    return effective ? ldpb_mech_epsilon_effective(m) : ldpb_mech_epsilon(m);
}

JNIEXPORT void JNICALL Java_org_ldpb_Mechanism_nativeFree(JNIEnv *env, jclass cls, jlong h)
{
    (void)env;
    (void)cls;
    jmech *m = mech_of(h);
    ldpb_mech_free(m->mech);
    ldpb_rng_free(m->rng);
    free(m);
}

/* ---- LdpbError ----------------------------------------------------------------------------------
 */

JNIEXPORT jstring JNICALL Java_org_ldpb_LdpbError_nativeName(JNIEnv *env, jclass cls, jint code)
{
    (void)cls;
    return (*env)->NewStringUTF(env, ldpb_errname((ldpb_err)code));
}
