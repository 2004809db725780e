/* Monotonic wall-clock time for timings and benchmarks. */
#ifndef TR_UTIL_TIMER_H
#define TR_UTIL_TIMER_H

double tr_time_ms(void);

#endif
