// SPDX-License-Identifier: Apache-2.0
/* trainscope report --plot: the picture of a job. Each rank's time per step in one phase
 * (by default the one the report blames: compute, launch, dataloader, ...; in a
 * synchronous job the step itself lasts as long as the slowest rank's everywhere), as
 * a heatmap of ranks over steps, each cell coloured by its ratio to that step's median
 * rank: the slow rank is the red row. The ranks the report
 * names are marked, and its alarm windows shaded. SVG, read back from the stream. */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_COLS = 300, MAX_ROWS = 128, MAX_RANKS = 65536, LEVELS = 24 };
enum { LEFT = 70, RIGHT = 190, TOP = 48, BOTTOM = 70, WIDTH = 1100, HEIGHT = 620 };
enum { LEGEND_H = 46 }; /* a row under the axis: the marks on the right keep their room */

struct sample {
	int32_t rank;
	float ms;
	uint64_t step;
};

static const char *const metrics[] = { "compute", "launch", "dataloader", "checkpoint",
					"collective", "step" };
enum { M_STEP = 5, NMETRICS = 6 };

struct plot {
	int metric;  /* of metrics[] */
	struct sample *s;
	size_t n, cap;
	int max_rank;
	uint64_t lo, hi; /* steps seen */
	int err;
};

static void add(struct plot *p, int rank, uint64_t step, double ms)
{
	if (p->err || rank < 0 || rank >= MAX_RANKS || !(ms >= 0))
		return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 4096;
		struct sample *s = realloc(p->s, cap * sizeof(*s));
		if (!s) {
			p->err = -ENOMEM;
			return;
		}
		p->s = s, p->cap = cap;
	}
	p->s[p->n++] = (struct sample){ rank, (float)ms, step };
	if (rank > p->max_rank)
		p->max_rank = rank;
	if (p->n == 1 || step < p->lo)
		p->lo = step;
	if (p->n == 1 || step > p->hi)
		p->hi = step;
}

static void on_batch(void *arg, const Trainscope__V1__Batch *b)
{
	for (size_t i = 0; b->id && i < b->n_records; i++) {
		const Trainscope__V1__Record *r = b->records[i];
		const Trainscope__V1__Step *s = r->step;
		if (r->kind_case != TRAINSCOPE__V1__RECORD__KIND_STEP)
			continue;
		const uint64_t ns[NMETRICS] = { s->compute_ns, s->launch_ns, s->dataloader_ns,
						s->checkpoint_ns, s->collective_ns,
						s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0 };
		add(arg, b->id->rank, s->step, (double)ns[((struct plot *)arg)->metric] / 1e6);
	}
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* Per rank and column, the mean of its steps there; NAN where none. */
static float *grid(const struct plot *p, int ranks, int cols)
{
	float *sum = calloc((size_t)ranks * (size_t)cols, sizeof(float));
	uint16_t *n = calloc((size_t)ranks * (size_t)cols, sizeof(uint16_t));
	uint64_t span = p->hi - p->lo + 1;

	if (!sum || !n) {
		free(sum), free(n);
		return NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		/* a column a step while they fit (exact: rounding would leave columns empty),
		 * else by floating point (steps far apart cannot overflow) */
		uint64_t d = p->s[i].step - p->lo;
		size_t c = span <= (uint64_t)cols ? (size_t)d
						  : (size_t)((long double)d / span * cols);
		c = c < (size_t)cols ? c : (size_t)cols - 1;
		size_t k = (size_t)p->s[i].rank * (size_t)cols + c;
		if (n[k] < UINT16_MAX)
			sum[k] += p->s[i].ms, n[k]++;
	}
	for (size_t k = 0; k < (size_t)ranks * (size_t)cols; k++)
		sum[k] = n[k] ? sum[k] / n[k] : NAN;
	free(n);
	return sum;
}

/* Each column's ratio to its median rank, per row (a row holds ranks/rows ranks: the
 * slowest of them shows, so one slow rank among many is not averaged away). */
static float *ratios(const float *g, int ranks, int cols, int rows)
{
	float *r = malloc((size_t)rows * (size_t)cols * sizeof(float));
	float *col = malloc((size_t)ranks * sizeof(float));

	if (!r || !col) {
		free(r), free(col);
		return NULL;
	}
	for (int c = 0; c < cols; c++) {
		int m = 0;
		for (int k = 0; k < ranks; k++)
			if (!isnan(g[(size_t)k * cols + c]))
				col[m++] = g[(size_t)k * cols + c];
		qsort(col, (size_t)m, sizeof(float), cmp_float);
		float med = m ? col[m / 2] : NAN;
		for (int row = 0; row < rows; row++) {
			float worst = NAN;
			for (int k = row * ranks / rows; k < (row + 1) * ranks / rows; k++) {
				float v = g[(size_t)k * cols + c] / med;
				if (!isnan(v) && (isnan(worst) || v > worst))
					worst = v;
			}
			r[(size_t)row * cols + c] = med > 0 ? worst : NAN;
		}
	}
	free(col);
	return r;
}

/* A diverging scale: blue below the median, white at it, red at +50 % and over. */
static int level(float ratio)
{
	if (isnan(ratio))
		return -1;
	double t = (ratio - 1.0) / 0.5;
	t = t < -1 ? -1 : t > 1 ? 1 : t;
	return (int)lround((t + 1) / 2 * (LEVELS - 1));
}

static void colour(int lvl, char out[8])
{
	static const int stops[3][3] = { { 69, 117, 180 }, { 247, 247, 247 }, { 215, 48, 39 } };
	double t = (double)lvl / (LEVELS - 1) * 2;
	int i = t >= 1 ? 1 : 0;
	double f = t - i;
	int rgb[3];

	for (int c = 0; c < 3; c++)
		rgb[c] = (int)lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
	snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

static void cells(FILE *f, const float *r, int rows, int cols)
{
	double cw = (double)(WIDTH - LEFT - RIGHT) / cols, rh = (double)(HEIGHT - TOP - BOTTOM) / rows;
	char fill[8];

	for (int row = 0; row < rows; row++)
		for (int c = 0; c < cols;) { /* a run of one colour is one rectangle */
			int lvl = level(r[(size_t)row * cols + c]), end = c + 1;
			while (end < cols && level(r[(size_t)row * cols + end]) == lvl)
				end++;
			if (lvl < 0)
				snprintf(fill, sizeof(fill), "#dddddd");
			else
				colour(lvl, fill);
			fprintf(f, "<rect x='%.2f' y='%.2f' width='%.2f' height='%.2f' fill='%s'/>\n",
				LEFT + c * cw, TOP + row * rh, (end - c) * cw + 0.3, rh + 0.3, fill);
			c = end;
		}
}

static double x_of(const struct plot *p, uint64_t step)
{
	double f = (double)(step - p->lo) / (double)(p->hi - p->lo + 1);

	return LEFT + f * (WIDTH - LEFT - RIGHT);
}

static double y_of(int rank, int ranks)
{
	return TOP + ((double)rank + 0.5) / ranks * (HEIGHT - TOP - BOTTOM);
}

static void axes(FILE *f, const struct plot *p, int ranks)
{
	int every = ranks <= 16 ? 1 : ranks / 8;

	for (int k = 0; k < ranks; k += every)
		fprintf(f, "<text x='%d' y='%.1f' font-size='11' text-anchor='end' "
			"dominant-baseline='middle'>%d</text>\n", LEFT - 6, y_of(k, ranks), k);
	if (ranks > 16 && (ranks - 1) % every)
		fprintf(f, "<text x='%d' y='%.1f' font-size='11' text-anchor='end' "
			"dominant-baseline='middle'>%d</text>\n", LEFT - 6, y_of(ranks - 1, ranks),
			ranks - 1);
	fprintf(f, "<text x='16' y='%d' font-size='12' transform='rotate(-90 16 %d)' "
		"text-anchor='middle'>rank</text>\n", (TOP + HEIGHT - BOTTOM) / 2,
		(TOP + HEIGHT - BOTTOM) / 2);
	for (int i = 0; i <= 10; i++) {
		uint64_t st = p->lo + (p->hi - p->lo) * (uint64_t)i / 10;
		fprintf(f, "<text x='%.1f' y='%d' font-size='11' text-anchor='middle'>%llu</text>\n",
			x_of(p, st), HEIGHT - BOTTOM + 16, (unsigned long long)st);
	}
	fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='middle'>step</text>\n",
		(LEFT + WIDTH - RIGHT) / 2, HEIGHT - BOTTOM + 34);
}

/* The report's alarm windows, shaded over the steps, and its named ranks marked. */
static void marks(FILE *f, const struct plot *p, int ranks, json_t *report)
{
	json_t *st = json_object_get(report, "status"), *ev;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(st, "history"), "events"), i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *cl = json_object_get(ev, "clearedStep");
		uint64_t on = (uint64_t)json_integer_value(json_object_get(ev, "onsetStep"));
		uint64_t raised = (uint64_t)json_integer_value(json_object_get(ev, "raisedStep"));
		uint64_t off = cl ? (uint64_t)json_integer_value(cl) : p->hi;
		if (!type || on > p->hi || off < p->lo)
			continue;
		on = on < p->lo ? p->lo : on, off = off > p->hi ? p->hi : off;
		bool rank = !strcmp(type, "SlowRank") && json_is_integer(json_object_get(ev, "rank"));
		int k = rank ? (int)json_integer_value(json_object_get(ev, "rank")) : 0;
		double rh = (double)(HEIGHT - TOP - BOTTOM) / ranks;
		fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s' "
			"fill-opacity='%s' stroke='%s' stroke-width='1.5' stroke-dasharray='5 3'/>\n",
			x_of(p, on), rank ? y_of(k, ranks) - rh / 2 - 2 : TOP, x_of(p, off + 1) - x_of(p, on),
			rank ? rh + 4 : HEIGHT - TOP - BOTTOM, rank ? "none" : "#7b3294",
			rank ? "0" : "0.10", rank ? "#000000" : "#7b3294");
		char what[48];
		if (rank)
			snprintf(what, sizeof(what), "rank %d named", k);
		else
			snprintf(what, sizeof(what), "%s raised", type);
		/* a rank's label above the map, the job's inside its top edge: never on each other */
		if (raised >= p->lo && raised <= p->hi)
			fprintf(f, "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='%s' "
				"stroke-width='1'/><text x='%.1f' y='%d' font-size='10' fill='%s'>"
				"%s</text>\n", x_of(p, raised), x_of(p, raised), TOP - 4,
				HEIGHT - BOTTOM, rank ? "#000000" : "#7b3294", x_of(p, raised) + 3,
				rank ? TOP - 6 : TOP + 12, rank ? "#000000" : "#7b3294", what);
	}
	json_array_foreach(json_object_get(st, "slowRanks"), i, ev) {
		int k = (int)json_integer_value(json_object_get(ev, "rank"));
		if (k < 0 || k >= ranks)
			continue;
		fprintf(f, "<text x='%d' y='%.1f' font-size='12' font-weight='bold' fill='#b2182b' "
			"dominant-baseline='middle'>&#9664; rank %d: %s %s</text>\n", WIDTH - RIGHT + 6,
			y_of(k, ranks), k, json_string_value(json_object_get(ev, "cause")),
			json_string_value(json_object_get(st, "degradation")) ?
				json_string_value(json_object_get(st, "degradation")) : "");
	}
}

static void legend(FILE *f)
{
	char fill[8];
	int x = LEFT, y = HEIGHT + 8;

	fprintf(f, "<text x='%d' y='%d' font-size='11' dominant-baseline='middle'>against the "
		"step's median rank:</text>\n", x, y + 5);
	x += 180;
	for (int l = 0; l < LEVELS; l++) {
		colour(l, fill);
		fprintf(f, "<rect x='%d' y='%d' width='8' height='10' fill='%s'/>\n", x + 8 * l, y, fill);
	}
	const char *ticks[] = { "-50 %", "median", "+50 % or more" };
	for (int i = 0; i < 3; i++)
		fprintf(f, "<text x='%d' y='%d' font-size='10' text-anchor='middle'>%s</text>\n",
			x + 4 + i * 8 * (LEVELS - 1) / 2, y + 24, ticks[i]);
	x += 8 * LEVELS + 60;
	fprintf(f, "<rect x='%d' y='%d' width='16' height='10' fill='none' stroke='#000' "
		"stroke-dasharray='5 3'/><text x='%d' y='%d' font-size='10'>a rank's alarm</text>\n",
		x, y, x + 22, y + 9);
	x += 120;
	fprintf(f, "<rect x='%d' y='%d' width='16' height='10' fill='#7b3294' fill-opacity='0.1' "
		"stroke='#7b3294' stroke-dasharray='5 3'/><text x='%d' y='%d' font-size='10'>the "
		"job's fail-slow or hang</text>\n", x, y, x + 22, y + 9);
}

/* The metric asked for, else the first slow rank's, else compute; -1: unknown. */
static int metric_of(json_t *report, const char *want)
{
	json_t *slow = json_array_get(json_object_get(json_object_get(report, "status"),
						      "slowRanks"), 0);
	const char *m = want ? want : json_string_value(json_object_get(slow, "metric"));

	for (int i = 0; m && i < NMETRICS; i++)
		if (!strcmp(m, metrics[i]))
			return i;
	return want ? -1 : 0;
}

int cli_plot(struct tsn *n, json_t *report, const char *path, const char *metric)
{
	json_t *md = json_object_get(report, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *job = json_string_value(json_object_get(md, "name"));
	struct plot p = { .max_rank = -1, .metric = metric_of(report, metric) };

	if (p.metric < 0) {
		fprintf(stderr, "trainscope report: --plot-metric is one of compute, launch, "
			"dataloader, checkpoint, collective, step; not %s\n", metric);
		return -1;
	}
	float *g = NULL, *r = NULL;
	FILE *f = NULL;
	int rc = -1;

	if (!ns || !job || cli_read_job(n, ns, job, on_batch, &p) || p.err || !p.n) {
		fprintf(stderr, "trainscope report: %s\n", p.err ? "out of memory" : !p.n ?
			"the stream holds no step of this job (its max age passed?)" :
			"cannot read the stream");
		free(p.s);
		return -1;
	}
	int ranks = p.max_rank + 1;
	int cols = p.hi - p.lo + 1 < MAX_COLS ? (int)(p.hi - p.lo + 1) : MAX_COLS;
	int rows = ranks < MAX_ROWS ? ranks : MAX_ROWS;
	if ((g = grid(&p, ranks, cols)) && (r = ratios(g, ranks, cols, rows)) &&
	    (f = fopen(path, "w"))) {
		fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
			"font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
			WIDTH, HEIGHT + LEGEND_H);
		fprintf(f, "<text x='%d' y='22' font-size='15' font-weight='bold'>%s/%s: %s, %d "
			"ranks, steps %llu-%llu</text>\n<text x='%d' y='38' font-size='11'>%s time per "
			"step of each rank against the step's median rank%s</text>\n",
			LEFT, ns, job, json_string_value(json_object_get(json_object_get(report,
			"status"), "state")), ranks, (unsigned long long)p.lo,
			(unsigned long long)p.hi, LEFT, metrics[p.metric], rows < ranks ?
			" (a row shows the slowest of its ranks)" : "");
		cells(f, r, rows, cols);
		axes(f, &p, ranks);
		marks(f, &p, ranks, report);
		legend(f);
		fprintf(f, "</svg>\n");
		rc = fclose(f) ? -1 : 0;
		if (rc == 0)
			printf("wrote %s: %d ranks x %llu steps (%zu rank-steps)\n", path, ranks,
			       (unsigned long long)(p.hi - p.lo + 1), p.n);
	}
	if (rc)
		fprintf(stderr, "trainscope report: cannot write %s: %s\n", path, strerror(errno));
	free(g), free(r), free(p.s);
	return rc;
}
