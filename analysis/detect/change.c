// SPDX-License-Identifier: Apache-2.0
#include "change.h"

#include <math.h>

int ts_change_update(struct ts_change *c, const struct ts_change_opts *o, double excess,
		     double sigma, uint64_t step, uint64_t t_ns, double v_ms, double ref_ms)
{
	double z, s;

	if (isnan(excess) || isnan(sigma))
		return TS_CHANGE_NONE;
	z = (excess - o->drift) / fmax(sigma, o->min_sigma);
	z = fmin(z, o->max_z);
	if (c->s <= 0 && z > 0) { /* a run begins */
		c->run_start = step, c->run_start_ns = t_ns;
		c->run_v = c->run_ref = 0, c->run_n = 0;
	}
	/* bounded above so that a cleared fault clears in a bounded number of steps */
	s = fmin(fmax(0, c->s + z), 2 * o->threshold);
	c->s = (float)s;
	if (s > 0) {
		c->run_v += (float)v_ms, c->run_ref += (float)ref_ms, c->run_n++;
	}
	if (!c->alarm && s >= o->threshold) {
		c->alarm = true;
		c->onset = c->run_start, c->onset_ns = c->run_start_ns, c->confirmed = step;
		return TS_CHANGE_RAISED;
	}
	if (c->alarm && s <= 0) {
		c->alarm = false;
		return TS_CHANGE_CLEARED;
	}
	return TS_CHANGE_NONE;
}

double ts_change_value(const struct ts_change *c)
{
	return c->run_n ? c->run_v / c->run_n : NAN;
}

double ts_change_ref(const struct ts_change *c)
{
	return c->run_n ? c->run_ref / c->run_n : NAN;
}
