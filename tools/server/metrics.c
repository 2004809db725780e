/* /metrics: Prometheus text exposition (format 0.0.4) of the counters. */
#include <stdio.h>
#include <stdlib.h>

#include "server.h"

const char *srv_err_kind_name(srv_err_kind k) {
    static const char *const names[SRV_ERR_KINDS] = {
        "bad_request", "unauthorized",      "not_found",  "method_not_allowed", "timeout",
        "too_large",   "unsupported_media", "overloaded", "internal",           "client_aborted",
    };
    return (k >= 0 && k < SRV_ERR_KINDS) ? names[k] : "unknown";
}

char *srv_metrics_text(const srv_metrics *m, int queue_depth, int in_flight, int state,
                       size_t *len) {
    char *data = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&data, &n);
    if (!f) return NULL;
    static const char *const endpoints[4] = {"transcriptions", "translations", "api", "other"};
    fputs("# HELP transcribe_requests_total HTTP requests received, by endpoint.\n"
          "# TYPE transcribe_requests_total counter\n",
          f);
    for (int i = 0; i < 4; i++)
        fprintf(f, "transcribe_requests_total{endpoint=\"%s\"} %lld\n", endpoints[i],
                (long long)atomic_load(&m->requests[i]));
    fputs("# HELP transcribe_errors_total Requests answered with an error, by kind.\n"
          "# TYPE transcribe_errors_total counter\n",
          f);
    for (int k = 0; k < SRV_ERR_KINDS; k++)
        fprintf(f, "transcribe_errors_total{kind=\"%s\"} %lld\n", srv_err_kind_name(k),
                (long long)atomic_load(&m->errors[k]));
    long long audio_ms = atomic_load(&m->audio_ms), compute_us = atomic_load(&m->compute_us);
    fprintf(f,
            "# HELP transcribe_transcriptions_total Runs that returned a transcript.\n"
            "# TYPE transcribe_transcriptions_total counter\n"
            "transcribe_transcriptions_total %lld\n"
            "# HELP transcribe_queue_depth Requests waiting for a free session.\n"
            "# TYPE transcribe_queue_depth gauge\n"
            "transcribe_queue_depth %d\n"
            "# HELP transcribe_in_flight Requests being received, waiting or running.\n"
            "# TYPE transcribe_in_flight gauge\n"
            "transcribe_in_flight %d\n"
            "# HELP transcribe_running Runs in progress.\n"
            "# TYPE transcribe_running gauge\n"
            "transcribe_running %d\n"
            "# HELP transcribe_draining 1 from SIGTERM on: /health fails so that a balancer\n"
            "# moves new requests elsewhere; running requests finish.\n"
            "# TYPE transcribe_draining gauge\n"
            "transcribe_draining %d\n"
            "# HELP transcribe_audio_seconds_total Audio transcribed, in seconds.\n"
            "# TYPE transcribe_audio_seconds_total counter\n"
            "transcribe_audio_seconds_total %.3f\n"
            "# HELP transcribe_compute_seconds_total Wall time spent in runs, in seconds.\n"
            "# TYPE transcribe_compute_seconds_total counter\n"
            "transcribe_compute_seconds_total %.6f\n"
            "# HELP transcribe_real_time_factor Compute time over audio time, since start.\n"
            "# TYPE transcribe_real_time_factor gauge\n"
            "transcribe_real_time_factor %.6f\n",
            (long long)atomic_load(&m->ok), queue_depth, in_flight, atomic_load(&m->running),
            state > 0, (double)audio_ms / 1000.0, (double)compute_us / 1e6,
            audio_ms > 0 ? ((double)compute_us / 1000.0) / (double)audio_ms : 0.0);
    if (fclose(f) != 0) {
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}
