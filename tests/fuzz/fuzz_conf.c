/*
 * tests/fuzz/fuzz_conf.c: libFuzzer target for the configuration loader,
 * ct_conf_load_string(): the code `cachet -t`, startup and SIGHUP reload run
 * on a file an operator wrote.
 *
 * Input: the text of a configuration file, up to its first NUL (the loader
 * takes a C string). Every check failing aborts, like a crash:
 *   - the answer is a configuration or located errors, never both and never
 *     neither: CT_OK with *out set and no error, or CT_ECONF with *out NULL
 *     and at least one message, each NUL-terminated and starting with the
 *     name given ("fuzz.conf:") or an @include'd file's name;
 *   - a loaded configuration dumps (`cachet -T`) to text that loads again
 *     and dumps to the same text (conf.h's promise for ct_conf_dump);
 *   - no leak and no exit(): libconfig 1.5 exit()s from its scanner on an
 *     @include of a directory (conf/ guards against it; the scratch folder
 *     below holds a directory so the guard is exercised).
 *
 * Hermetic: each input is loaded with the working directory switched to a
 * scratch folder made once per process under $TMPDIR (run.sh points that
 * into its own scratch folder: a timed libFuzzer run ends with _Exit, past
 * our atexit cleanup), holding inc.conf (a valid
 * fragment), bad.conf (a syntax error) and dir/ (a directory), so relative
 * @include and certificate paths resolve there and nowhere else. Inputs that
 * could reach outside it are skipped: an @include name with a '/', any
 * backslash (string escapes can spell any path), and any path under /dev,
 * /proc, /sys or /run (a certificate setting opens its file, and those can
 * block on open or never end). libconfig 1.5 also leaks a token on some
 * syntax errors (libconfig #142): run.sh hands tests/fuzz/lsan.supp to
 * LeakSanitizer for that one frame.
 */
#include "conf/conf.h"
#include "tests/fuzz/fuzz_check.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[256];
static int home_fd = -1, scratch_fd = -1;

static void put_file(const char *name, const char *text)
{
    FILE *fp = fopen(name, "w");
    FUZZ_CHECK(fp != NULL);
    fputs(text, fp);
    FUZZ_CHECK(fclose(fp) == 0);
}

static void scratch_remove(void)
{
    if (scratch_fd < 0 || fchdir(scratch_fd) != 0)
        return;
    unlink("inc.conf");
    unlink("bad.conf");
    rmdir("dir");
    if (fchdir(home_fd) == 0)
        rmdir(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof(scratch), "%s/ct-fuzz-conf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(scratch) != NULL);
    home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FUZZ_CHECK(home_fd >= 0 && scratch_fd >= 0 && fchdir(scratch_fd) == 0);
    put_file("inc.conf", "workers = 2;\n");
    put_file("bad.conf", "cache = { size = ;\n");
    FUZZ_CHECK(mkdir("dir", 0700) == 0);
    FUZZ_CHECK(fchdir(home_fd) == 0);
    atexit(scratch_remove);
    return 0;
}

/* Could loading TEXT touch anything outside the scratch folder, or block? */
static bool reaches_out(const char *text)
{
    static const char *const blocked[] = {"/dev", "/proc", "/sys", "/run"};
    if (strchr(text, '\\'))
        return true;
    for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++)
        if (strstr(text, blocked[i]))
            return true;
    for (const char *p = text; (p = strstr(p, "@include")) != NULL; p += 8) {
        const char *open = strchr(p + 8, '"');
        if (open == NULL)
            break;
        size_t n = strcspn(open + 1, "\"");
        if (memchr(open + 1, '/', n))
            return true;
    }
    return false;
}

/* Load TEXT; check the answer's shape; return the config (or NULL). */
static struct ct_conf *load_checked(const char *text)
{
    struct ct_conf_errors errs;
    struct ct_conf *cf = (struct ct_conf *)&errs; /* must be overwritten */
    ct_conf_errors_init(&errs);
    int rc = ct_conf_load_string(text, "fuzz.conf", &cf, &errs);
    if (rc == CT_OK) {
        FUZZ_CHECK(cf != NULL && errs.n == 0 && errs.dropped == 0);
        return cf;
    }
    FUZZ_CHECK(rc == CT_ECONF && cf == NULL && errs.n > 0 && errs.n <= CT_CONF_MAX_ERRORS);
    for (size_t i = 0; i < errs.n; i++) {
        FUZZ_CHECK(memchr(errs.msg[i], '\0', CT_CONF_ERR_LEN) != NULL);
        FUZZ_CHECK(strchr(errs.msg[i], ':') != NULL); /* FILE:LINE: or FILE: */
    }
    return NULL;
}

/* ct_conf_dump(CF) as a malloc'd string. */
static char *dump(const struct ct_conf *cf)
{
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    FUZZ_CHECK(fp != NULL);
    ct_conf_dump(cf, fp);
    FUZZ_CHECK(fclose(fp) == 0 && text != NULL);
    return text;
}

static void round_trip(const struct ct_conf *cf)
{
    char *first = dump(cf);
    struct ct_conf *again = load_checked(first);
    if (again == NULL)
        fprintf(stderr, "the dump of a loaded configuration does not load:\n%s\n", first);
    FUZZ_CHECK(again != NULL);
    char *second = dump(again);
    if (strcmp(first, second) != 0)
        fprintf(stderr, "dump, load, dump differs:\n--- first\n%s\n--- second\n%s\n", first,
                second);
    FUZZ_CHECK(strcmp(first, second) == 0);
    ct_conf_free(&again);
    free(first);
    free(second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    if (!reaches_out(text)) {
        FUZZ_CHECK(fchdir(scratch_fd) == 0);
        struct ct_conf *cf = load_checked(text);
        if (cf) {
            round_trip(cf);
            ct_conf_free(&cf);
            FUZZ_CHECK(cf == NULL);
        }
        FUZZ_CHECK(fchdir(home_fd) == 0);
    }
    free(text);
    return 0;
}
