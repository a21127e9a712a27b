// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The figures of field fuzzing: the outcomes of the cases run, by object
 * and by field for each golden image, by transform and by CRC mode, and
 * the forged-log cases and failures by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffz.h"

const char *const ffz_x_names[] = {
	"zero", "ones", "high-bit", "mid-bit", "low-bit", "+1", "-1", "random", "lost-write",
};

const char *const ffz_w_names[] = {
	"check0", "damage", "recover", "mount", "open", "write", "clone", "swap", "fsync", "read",
	"close", "unmount", "check1", "done",
};

const char *const ffz_o_names[] = {
	"not run", "unchanged", "mount-err", "op-err", "ok-clean", "ok-known", "forged-log",
	"FAIL-new", "FAIL-crash", "FAIL-hang", "FAIL-sanitizer", "FAIL-leak", "FAIL-checker",
	"FAIL-recovery",
};

const char *ffz_case_name(const struct ffz_set *s, const struct ffz_case *c, char *buf,
			  size_t len)
{
	const struct ffz_obj *o;

	if (c->c_x == X_LOST) {
		snprintf(buf, len, "%s: lost write of block %llu (%s)", s->s_images[c->c_image].fi_name,
			 (unsigned long long)c->c_blk, "older version");
		return buf;
	}
	o = &s->s_objects[c->c_obj];
	snprintf(buf, len, "%s: %s [%s] %s %s, CRC %s", s->s_images[c->c_image].fi_name,
		 o->o_type->ot_name, o->o_where, ffz_obj_field(o, c->c_field)->f_name,
		 ffz_x_names[c->c_x], (ffz_obj_field(o, c->c_field)->f_flags & FFZ_F_CRC) ?
		 "(the field)" : c->c_stale ? "stale" : "recomputed");
	return buf;
}

static void t_add(struct ffz_tally *t, u32 outcome)
{
	t->t_n[outcome]++;
	if (outcome != O_NOTRUN && outcome != O_UNCHANGED)
		t->t_run++;
}

u32 ffz_tally_failed(const struct ffz_tally *t)
{
	u32 o, n = 0;

	for (o = O_FAIL_NEW; o < FFZ_NO; o++)
		n += t->t_n[o];
	return n;
}

static void t_header(FILE *f, const char *what)
{
	fprintf(f, "| %s | cases | unchanged | mount-err | op-err | ok-clean | ok-known | forged-log | failed |\n",
		what);
	fprintf(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
}

static void t_row(FILE *f, const char *name, const struct ffz_tally *t)
{
	fprintf(f, "| %s | %u | %u | %u | %u | %u | %u | %u | %u |\n", name, t->t_run,
		t->t_n[O_UNCHANGED], t->t_n[O_MOUNT_ERR], t->t_n[O_OP_ERR], t->t_n[O_OK_CLEAN],
		t->t_n[O_OK_KNOWN], t->t_n[O_FORGED], ffz_tally_failed(t));
}

/* The row name of a case: object, or object.field with @field. */
static void ffz_row_name(const struct ffz_set *s, const struct ffz_case *c, bool field, char *buf, size_t len)
{
	const struct ffz_obj *o;

	if (c->c_x == X_LOST) {
		snprintf(buf, len, "lost write");
		return;
	}
	o = &s->s_objects[c->c_obj];
	if (field)
		snprintf(buf, len, "%s . %s", o->o_type->ot_name,
			 ffz_obj_field(o, c->c_field)->f_name);
	else
		snprintf(buf, len, "%s", o->o_type->ot_name);
}

/* One table per image: rows named by @field or not, in the order they first appear. */
static void ffz_table(const struct ffz_set *s, FILE *f, u32 img, bool field, struct ffz_tally *total)
{
	char (*names)[96] = calloc(s->s_ncases ? s->s_ncases : 1, sizeof(*names));
	struct ffz_tally *t = calloc(s->s_ncases ? s->s_ncases : 1, sizeof(*t));
	u32 nrows = 0, i, j;
	char name[96];

	if (!names || !t)
		abort();
	for (i = 0; i < s->s_ncases; i += s->s_every) {
		if (s->s_cases[i].c_image != img)
			continue;
		ffz_row_name(s, &s->s_cases[i], field, name, sizeof(name));
		for (j = 0; j < nrows && strcmp(names[j], name); j++)
			;
		if (j == nrows)
			memcpy(names[nrows++], name, sizeof(name));
		t_add(&t[j], s->s_results[i].r_outcome);
		if (total)
			t_add(total, s->s_results[i].r_outcome);
	}
	fprintf(f, "\nImage \"%s\", by %s:\n\n", s->s_images[img].fi_name, field ? "field" : "object");
	t_header(f, field ? "object . field" : "object");
	for (j = 0; j < nrows; j++)
		t_row(f, names[j], &t[j]);
	free(names);
	free(t);
}

void ffz_figures(const struct ffz_set *s, FILE *f, struct ffz_tally *total)
{
	struct ffz_tally tx[FFZ_NX + 1], tc[2];
	u32 img, i;

	memset(total, 0, sizeof(*total));
	for (img = 0; img < FFZ_NIMG; img++)
		ffz_table(s, f, img, false, total);
	if (s->s_fields)
		for (img = 0; img < FFZ_NIMG; img++)
			ffz_table(s, f, img, true, NULL);

	memset(tx, 0, sizeof(tx));
	memset(tc, 0, sizeof(tc));
	for (i = 0; i < s->s_ncases; i += s->s_every) {
		t_add(&tx[s->s_cases[i].c_x], s->s_results[i].r_outcome);
		if (s->s_cases[i].c_x != X_LOST)
			t_add(&tc[s->s_cases[i].c_stale], s->s_results[i].r_outcome);
	}
	fprintf(f, "\nBy transform:\n\n");
	t_header(f, "transform");
	for (i = 0; i <= FFZ_NX; i++)
		t_row(f, ffz_x_names[i], &tx[i]);
	fprintf(f, "\nBy CRC:\n\n");
	t_header(f, "CRC");
	t_row(f, "recomputed", &tc[0]);
	t_row(f, "stale (or the CRC field itself)", &tc[1]);
	fprintf(f, "\nAll: %u cases run, %u unchanged (not run), %u mount-err, %u op-err, %u ok-clean, %u ok-known, %u forged-log, %u failed\n",
		total->t_run, total->t_n[O_UNCHANGED], total->t_n[O_MOUNT_ERR],
		total->t_n[O_OP_ERR], total->t_n[O_OK_CLEAN], total->t_n[O_OK_KNOWN],
		total->t_n[O_FORGED], ffz_tally_failed(total));
	fprintf(f, "forged-log: a log record damaged with its CRC recomputed was replayed and the\n"
		"checker finds what it did. A CRC cannot tell a forged record from a real one\n"
		"(README, \"What damage is detected\"); these are counted apart, not passed.\n");
}

void ffz_failures(const struct ffz_set *s)
{
	u32 i, shown = 0, forged = 0;
	char name[256];

	for (i = 0; i < s->s_ncases; i += s->s_every) {
		const struct ffz_res *r = &s->s_results[i];

		if (r->r_outcome != O_FORGED || forged++ >= 20)
			continue;
		printf("forged-log case %u: %s: %s\n", i, ffz_case_name(s, &s->s_cases[i], name, sizeof(name)),
		       r->r_line);
	}

	for (i = 0; i < s->s_ncases; i += s->s_every) {
		const struct ffz_res *r = &s->s_results[i];

		if (!ffz_failed(r->r_outcome))
			continue;
		if (shown++ >= 200)
			continue;
		printf("FAIL case %u: %s: %s at %s", i, ffz_case_name(s, &s->s_cases[i], name, sizeof(name)),
		       ffz_o_names[r->r_outcome], ffz_w_names[r->r_phase]);
		if (r->r_sig)
			printf(" (signal/status %d)", r->r_sig);
		if (r->r_outcome == O_FAIL_RECOVERY)
			printf(": %u cross-links after recovery alone: %s", r->r_prec, r->r_line);
		if (r->r_outcome == O_FAIL_NEW)
			printf(": %u new of %u problems (%u before): %s", r->r_pnew, r->r_p1, r->r_p0,
			       r->r_line);
		printf("\n");
	}
	if (shown > 200)
		printf("(%u more failures)\n", shown - 200);
}
