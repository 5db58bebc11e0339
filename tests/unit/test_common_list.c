/* tests/unit/test_common_list.c: the intrusive list macros. Every step is
 * checked both ways (first -> last along next, last -> first along prev), so
 * a macro that forgets one of the four pointers it must fix fails here. */
#include "common/list.h"
#include "common/common.h"
#include "tests/unit/ct_test.h"

struct item {
    int v;
    CT_LIST_LINK(item) link;
    CT_LIST_LINK(item) other; /* a second list the same item can be on */
};

typedef CT_LIST_HEAD(item) item_list;
typedef CT_HLIST_HEAD(item) item_hlist;

/* From FIRST along next: exactly WANT[0..n), each prev the one before. */
static void walk(struct item *first, const int *want, size_t n)
{
    struct item *before = NULL;
    size_t i = 0;
    for (struct item *it = first; it; it = CT_LIST_NEXT(it, link)) {
        CU_ASSERT_FATAL(i < n);
        CU_ASSERT_EQUAL(it->v, want[i]);
        CU_ASSERT_PTR_EQUAL(CT_LIST_PREV(it, link), before);
        before = it;
        i++;
    }
    CU_ASSERT_EQUAL(i, n);
}

/* The list holds exactly WANT[0..n) in order, both ways, and the head's
 * ends agree. */
static void expect(item_list *h, const int *want, size_t n)
{
    walk(CT_LIST_FIRST(h), want, n);
    struct item *it;
    size_t i = n;
    CT_LIST_FOREACH_REVERSE(it, h, link) {
        CU_ASSERT_FATAL(i > 0);
        CU_ASSERT_EQUAL(it->v, want[--i]);
    }
    CU_ASSERT_EQUAL(i, 0);
    CU_ASSERT_EQUAL(CT_LIST_EMPTY(h), n == 0);
    if (n) {
        CU_ASSERT_EQUAL(CT_LIST_LAST(h)->v, want[n - 1]);
        CU_ASSERT_PTR_NULL(CT_LIST_NEXT(CT_LIST_LAST(h), link));
    } else {
        CU_ASSERT_PTR_NULL(CT_LIST_LAST(h));
    }
}
#define EXPECT(h, ...)                                                         \
    do {                                                                       \
        static const int want_[] = {__VA_ARGS__};                              \
        expect((h), want_, CT_ARRAY_LEN(want_));                               \
    } while (0)

static void test_insert_remove(void)
{
    struct item a = {.v = 1}, b = {.v = 2}, c = {.v = 3}, d = {.v = 4}, e = {.v = 5};
    item_list h = {0}; /* zeroed = empty, no init call */
    expect(&h, NULL, 0);
    CT_LIST_INSERT_HEAD(&h, &b, link);
    EXPECT(&h, 2);
    CT_LIST_INSERT_HEAD(&h, &a, link);
    EXPECT(&h, 1, 2);
    CT_LIST_INSERT_TAIL(&h, &d, link);
    EXPECT(&h, 1, 2, 4);
    CT_LIST_INSERT_AFTER(&h, &b, &c, link);
    EXPECT(&h, 1, 2, 3, 4);
    CT_LIST_INSERT_AFTER(&h, &d, &e, link); /* after the last: new last */
    EXPECT(&h, 1, 2, 3, 4, 5);
    CU_ASSERT_FALSE(CT_LIST_IS_UNLINKED(&c, link));
    CT_LIST_REMOVE(&h, &c, link); /* middle */
    EXPECT(&h, 1, 2, 4, 5);
    CU_ASSERT_TRUE(CT_LIST_IS_UNLINKED(&c, link));
    CT_LIST_REMOVE(&h, &a, link); /* first */
    EXPECT(&h, 2, 4, 5);
    CT_LIST_REMOVE(&h, &e, link); /* last */
    EXPECT(&h, 2, 4);
    CT_LIST_INSERT_BEFORE(&h, &b, &a, link); /* before the first: new first */
    EXPECT(&h, 1, 2, 4);
    CT_LIST_INSERT_BEFORE(&h, &d, &c, link);
    EXPECT(&h, 1, 2, 3, 4);
    CT_LIST_REMOVE(&h, &a, link);
    CT_LIST_REMOVE(&h, &b, link);
    CT_LIST_REMOVE(&h, &d, link);
    EXPECT(&h, 3);
    CT_LIST_REMOVE(&h, &c, link); /* the only one */
    expect(&h, NULL, 0);
    CT_LIST_INSERT_TAIL(&h, &e, link); /* tail into an empty list */
    EXPECT(&h, 5);
    CT_LIST_INIT(&h);
    expect(&h, NULL, 0);
}

static void test_foreach_safe(void)
{
    struct item it[10];
    item_list h = {0}, odd = {0};
    for (int i = 0; i < 10; i++) {
        it[i] = (struct item){.v = i};
        CT_LIST_INSERT_TAIL(&h, &it[i], link);
        if (i % 2)
            CT_LIST_INSERT_HEAD(&odd, &it[i], other); /* two lists at once */
    }
    /* Remove every even element while walking. */
    struct item *v, *t;
    CT_LIST_FOREACH_SAFE(v, &h, link, t)
        if (v->v % 2 == 0)
            CT_LIST_REMOVE(&h, v, link);
    EXPECT(&h, 1, 3, 5, 7, 9);
    /* The other list did not notice. */
    int n = 0, want = 9;
    CT_LIST_FOREACH(v, &odd, other) {
        CU_ASSERT_EQUAL(v->v, want);
        want -= 2;
        n++;
    }
    CU_ASSERT_EQUAL(n, 5);
    /* Reverse, removing all: ends empty. */
    CT_LIST_FOREACH_REVERSE_SAFE(v, &h, link, t)
        CT_LIST_REMOVE(&h, v, link);
    expect(&h, NULL, 0);
    for (int i = 0; i < 10; i++)
        CU_ASSERT_TRUE(CT_LIST_IS_UNLINKED(&it[i], link));
}

/* An hlist holds WANT[0..n) in order, linked both ways. */
static void expect_h(item_hlist *h, const int *want, size_t n)
{
    walk(CT_LIST_FIRST(h), want, n);
    CU_ASSERT_EQUAL(CT_LIST_EMPTY(h), n == 0);
}
#define EXPECT_H(h, ...)                                                       \
    do {                                                                       \
        static const int want_[] = {__VA_ARGS__};                              \
        expect_h((h), want_, CT_ARRAY_LEN(want_));                             \
    } while (0)

static void test_hlist(void)
{
    struct item a = {.v = 1}, b = {.v = 2}, c = {.v = 3}, d = {.v = 4};
    item_hlist h = {0};
    CU_ASSERT_EQUAL(sizeof(h), sizeof(void *)); /* the point of an hlist */
    expect_h(&h, NULL, 0);
    CT_HLIST_INSERT_HEAD(&h, &c, link);
    CT_HLIST_INSERT_HEAD(&h, &a, link);
    EXPECT_H(&h, 1, 3);
    CT_HLIST_INSERT_AFTER(&h, &a, &b, link);
    CT_HLIST_INSERT_AFTER(&h, &c, &d, link); /* after the last */
    EXPECT_H(&h, 1, 2, 3, 4);
    CT_HLIST_REMOVE(&h, &b, link);
    EXPECT_H(&h, 1, 3, 4);
    CU_ASSERT_TRUE(CT_LIST_IS_UNLINKED(&b, link));
    CT_HLIST_REMOVE(&h, &a, link); /* first */
    EXPECT_H(&h, 3, 4);
    CT_HLIST_REMOVE(&h, &d, link); /* last */
    EXPECT_H(&h, 3);
    struct item *v, *t;
    CT_LIST_FOREACH_SAFE(v, &h, link, t)
        CT_HLIST_REMOVE(&h, v, link);
    expect_h(&h, NULL, 0);
}

void ct_test_register(void)
{
    CT_SUITE("common list", {"insert head/tail/after/before, remove", test_insert_remove},
             {"foreach safe, two lists per element", test_foreach_safe},
             {"hlist: one-pointer head", test_hlist});
}
