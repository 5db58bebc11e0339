/*
 * http/http_date.c: HTTP-date (RFC 9110 §5.6.7).
 *
 * We send only IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") and accept the
 * three formats the RFC says recipients MUST accept:
 *
 *   IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
 *   RFC 850      Sunday, 06-Nov-94 08:49:37 GMT   (two-digit year, see below)
 *   asctime      Sun Nov  6 08:49:37 1994
 *
 * Strict: exact spelling and case of names (the grammar uses %s"..."), exact
 * single spaces, digits where digits go, and every field in range (a day that
 * the month does not have, hour 24, minute 60 are rejected; second 60 is the
 * leap second the grammar allows). The day name is checked for spelling but
 * not against the date: the RFC does not ask recipients to, and origins
 * that get it wrong still mean the date they wrote.
 *
 * No locale, no strptime, no timegm: calendar arithmetic on days since the
 * epoch (H. Hinnant's civil-date algorithms), so results do not depend on
 * TZ or LC_TIME and work for any time_t.
 */
#include "http/http.h"

static const char day_names[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const day_names_long[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                              "Thursday", "Friday", "Saturday"};
static const char month_names[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct civil {
    int64_t year;
    int month, day; /* 1-based */
    int hour, min, sec;
};

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, struct civil *c)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    c->day = (int)(doy - (153 * mp + 2) / 5 + 1);
    c->month = (int)(mp < 10 ? mp + 3 : mp - 9);
    c->year = yoe + era * 400 + (c->month <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

static void civil_from_time(time_t t, struct civil *c, int *wday)
{
    int64_t days = floor_div((int64_t)t, 86400);
    int64_t secs = (int64_t)t - days * 86400;
    civil_from_days(days, c);
    c->hour = (int)(secs / 3600);
    c->min = (int)(secs / 60 % 60);
    c->sec = (int)(secs % 60);
    if (wday)
        *wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday (4) */
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* ---- formatting ------------------------------------------------------ */

static char *put_num(char *o, int64_t v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        o[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return o + width;
}

void ct_http_date_format(time_t t, char out[CT_HTTP_DATE_LEN + 1])
{
    /* IMF-fixdate has a four-digit year: clamp to years 0000-9999 rather
     * than write a date of the wrong length. */
    const int64_t lo = days_from_civil(0, 1, 1) * 86400;
    const int64_t hi = days_from_civil(10000, 1, 1) * 86400 - 1;
    int64_t v = (int64_t)t;
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    struct civil c;
    int wday;
    civil_from_time((time_t)v, &c, &wday);
    char *o = out;
    memcpy(o, day_names[wday], 3);
    o += 3;
    *o++ = ',';
    *o++ = ' ';
    o = put_num(o, c.day, 2);
    *o++ = ' ';
    memcpy(o, month_names[c.month - 1], 3);
    o += 3;
    *o++ = ' ';
    o = put_num(o, c.year, 4);
    *o++ = ' ';
    o = put_num(o, c.hour, 2);
    *o++ = ':';
    o = put_num(o, c.min, 2);
    *o++ = ':';
    o = put_num(o, c.sec, 2);
    memcpy(o, " GMT", 4);
    o += 4;
    *o = '\0';
    CT_ASSERT(o - out == CT_HTTP_DATE_LEN);
}

const char *ct_http_date_cached(struct ct_http_date_cache *dc, time_t now)
{
    /* text[0] == 0: never formatted (a zeroed cache), whatever sec says. */
    if (CT_UNLIKELY(now != dc->sec || dc->text[0] == '\0')) {
        ct_http_date_format(now, dc->text);
        dc->sec = now;
    }
    return dc->text;
}

/* ---- parsing --------------------------------------------------------- */

/* A cursor over the input; every helper fails (returns false) on mismatch. */
struct cur {
    const char *p, *end;
};

static bool lit(struct cur *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

static bool digits(struct cur *c, int n, int *out)
{
    int v = 0;
    if (c->end - c->p < n)
        return false;
    for (int i = 0; i < n; i++) {
        char ch = c->p[i];
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (ch - '0');
    }
    c->p += n;
    *out = v;
    return true;
}

static bool month(struct cur *c, int *m)
{
    for (int i = 0; i < 12; i++) {
        if (lit(c, month_names[i])) {
            *m = i + 1;
            return true;
        }
    }
    return false;
}

static bool day_name(struct cur *c)
{
    for (int i = 0; i < 7; i++)
        if (lit(c, day_names[i]))
            return true;
    return false;
}

static bool day_name_long(struct cur *c)
{
    for (int i = 0; i < 7; i++)
        if (lit(c, day_names_long[i]))
            return true;
    return false;
}

/* time-of-day = hour ":" minute ":" second */
static bool time_of_day(struct cur *c, struct civil *cv)
{
    return digits(c, 2, &cv->hour) && lit(c, ":") && digits(c, 2, &cv->min) && lit(c, ":") &&
           digits(c, 2, &cv->sec);
}

static bool in_range(const struct civil *cv)
{
    return cv->month >= 1 && cv->month <= 12 && cv->day >= 1 &&
           cv->day <= days_in_month(cv->year, cv->month) && cv->hour <= 23 && cv->min <= 59 &&
           cv->sec <= 60; /* 60: the leap second of the grammar */
}

/* Sun, 06 Nov 1994 08:49:37 GMT */
static bool parse_imf(struct cur *c, struct civil *cv)
{
    int y = 0;
    bool ok = day_name(c) && lit(c, ", ") && digits(c, 2, &cv->day) && lit(c, " ") &&
              month(c, &cv->month) && lit(c, " ") && digits(c, 4, &y) && lit(c, " ") &&
              time_of_day(c, cv) && lit(c, " GMT");
    cv->year = y;
    return ok;
}

/* RFC 9110 §5.6.7: a two-digit year that "appears to be more than 50 years
 * in the future" is the most recent past year with the same last two digits.
 * So the year is the one with digits YY in [now+50-99, now+50], and in the
 * boundary year now+50 the full timestamp decides. */
static void rfc850_year(struct civil *cv, int yy, time_t now)
{
    struct civil n;
    civil_from_time(now, &n, NULL);
    int64_t top = n.year + 50;
    int64_t y = top - floor_div(top, 100) * 100 < yy ? floor_div(top, 100) * 100 - 100 + yy
                                                     : floor_div(top, 100) * 100 + yy;
    if (y == top) {
        int a[5] = {cv->month, cv->day, cv->hour, cv->min, cv->sec};
        int b[5] = {n.month, n.day, n.hour, n.min, n.sec};
        for (int i = 0; i < 5; i++) {
            if (a[i] != b[i]) {
                if (a[i] > b[i])
                    y -= 100;
                break;
            }
        }
    }
    cv->year = y;
}

/* Sunday, 06-Nov-94 08:49:37 GMT */
static bool parse_rfc850(struct cur *c, struct civil *cv, time_t now)
{
    int yy;
    if (!(day_name_long(c) && lit(c, ", ") && digits(c, 2, &cv->day) && lit(c, "-") &&
          month(c, &cv->month) && lit(c, "-") && digits(c, 2, &yy) && lit(c, " ") &&
          time_of_day(c, cv) && lit(c, " GMT")))
        return false;
    rfc850_year(cv, yy, now);
    return true;
}

/* Sun Nov  6 08:49:37 1994  (date3 = month SP ( 2DIGIT / ( SP DIGIT ) )) */
static bool parse_asctime(struct cur *c, struct civil *cv)
{
    int y = 0;
    if (!(day_name(c) && lit(c, " ") && month(c, &cv->month) && lit(c, " ")))
        return false;
    if (lit(c, " ")) {
        if (!digits(c, 1, &cv->day))
            return false;
    } else if (!digits(c, 2, &cv->day)) {
        return false;
    }
    bool ok = lit(c, " ") && time_of_day(c, cv) && lit(c, " ") && digits(c, 4, &y);
    cv->year = y;
    return ok;
}

int ct_http_date_parse_at(struct ct_str s, time_t now, time_t *t)
{
    struct civil cv = {0};
    struct cur c = {s.p, s.p + s.len};
    bool ok;
    if (s.p == NULL || s.len < 4)
        return CT_EPROTO;
    if (s.p[3] == ',')
        ok = parse_imf(&c, &cv);
    else if (s.p[3] == ' ')
        ok = parse_asctime(&c, &cv);
    else
        ok = parse_rfc850(&c, &cv, now);
    if (!ok || c.p != c.end || !in_range(&cv))
        return CT_EPROTO;
    int64_t v =
        days_from_civil(cv.year, cv.month, cv.day) * 86400 + cv.hour * 3600 + cv.min * 60 + cv.sec;
    if (sizeof(time_t) < sizeof(int64_t) && (v > INT32_MAX || v < INT32_MIN))
        return CT_EPROTO;
    *t = (time_t)v;
    return CT_OK;
}

int ct_http_date_parse(struct ct_str s, time_t *t)
{
    /* The clock is only needed to place an RFC 850 two-digit year. */
    return ct_http_date_parse_at(s, time(NULL), t);
}
