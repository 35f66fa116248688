/* gpt3d core: the one clock every module reads for durations, deadlines and timers.
 *
 * CLOCK_MONOTONIC: never steps back when the wall clock is set, so a timeout or a measured
 * interval stays right across NTP adjustments.  Unique file names and timestamps that must
 * be wall-clock time read CLOCK_REALTIME themselves. */
#ifndef G3_CORE_CLOCK_H
#define G3_CORE_CLOCK_H

/* RET: seconds since an arbitrary fixed point (the monotonic clock). */
double g3_clock_now(void);

#endif
