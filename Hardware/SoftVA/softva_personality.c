/*
 * SoftVA personalities: Hardware/Profiles/<name>.profile files that describe a real device's
 * VA-API surface (profiles, entrypoints, attributes, vendor string, init failures).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <va/va_str.h>

#include "softva_internal.h"
#include "softva_status_names.h"

int sva_profile_from_name(const char *name, VAProfile *out)
{
    for (int v = -1; v < 64; v++) {
        const char *s = vaProfileStr((VAProfile)v);
        if (s && strcmp(s, name) == 0) { *out = (VAProfile)v; return 0; }
    }
    return -1;
}

int sva_entrypoint_from_name(const char *name, VAEntrypoint *out)
{
    for (int v = 1; v < 64; v++) {
        const char *s = vaEntrypointStr((VAEntrypoint)v);
        if (s && strcmp(s, name) == 0) { *out = (VAEntrypoint)v; return 0; }
    }
    return -1;
}

int sva_attrib_from_name(const char *name, VAConfigAttribType *out)
{
    for (int v = 0; v < VAConfigAttribTypeMax; v++) {
        const char *s = vaConfigAttribTypeStr((VAConfigAttribType)v);
        if (s && strcmp(s, name) == 0) { *out = (VAConfigAttribType)v; return 0; }
    }
    return -1;
}

static const struct { const char *name; VAStatus value; } status_names[] = {
#define X(n) { #n, n },
    SVA_STATUS_NAMES
#undef X
};

int sva_status_from_name(const char *name, VAStatus *out)
{
    for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
        if (strcmp(status_names[i].name, name) == 0) { *out = status_names[i].value; return 0; }
    return -1;
}

const char *sva_status_name(VAStatus s)
{
    for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
        if (status_names[i].value == s) return status_names[i].name;
    return "VA_STATUS_UNKNOWN_VALUE";
}

void sva_personality_free(sva_personality *p)
{
    free(p->pairs);
    free(p->attrs);
    memset(p, 0, sizeof(*p));
}

static char *next_field(char **cursor)
{
    char *s = *cursor;
    while (*s == ' ') s++;
    if (!*s) return NULL;
    char *e = strchr(s, ' ');
    if (e) { *e = 0; *cursor = e + 1; } else { *cursor = s + strlen(s); }
    return s;
}

int sva_personality_load(const char *path, sva_personality *p, char *err, size_t err_len)
{
    memset(p, 0, sizeof(*p));
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "cannot open profile %s", path);
        return -1;
    }
    char line[2048];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len || line[0] == '#')
            continue;
        char *cursor = line;
        char *key = next_field(&cursor);
        if (!key)
            continue;
        if (!strcmp(key, "name")) {
            snprintf(p->name, sizeof(p->name), "%s", cursor);
        } else if (!strcmp(key, "vendor")) {
            snprintf(p->vendor, sizeof(p->vendor), "%s", cursor);
        } else if (!strcmp(key, "driver")) {
            snprintf(p->driver, sizeof(p->driver), "%s", cursor);
        } else if (!strcmp(key, "api")) {
            snprintf(p->api, sizeof(p->api), "%s", cursor);
        } else if (!strcmp(key, "config") || !strcmp(key, "attr")) {
            char *pn = next_field(&cursor), *en = next_field(&cursor);
            VAProfile prof; VAEntrypoint ep;
            if (!pn || !en || sva_profile_from_name(pn, &prof) || sva_entrypoint_from_name(en, &ep)) {
                snprintf(err, err_len, "%s:%d: unknown profile or entrypoint", path, lineno);
                rc = -1; break;
            }
            if (key[0] == 'c') {
                sva_pair *np = realloc(p->pairs, sizeof(*np) * (size_t)(p->num_pairs + 1));
                if (!np) { rc = -1; break; }
                p->pairs = np;
                p->pairs[p->num_pairs++] = (sva_pair){ prof, ep };
            } else {
                char *an = next_field(&cursor), *vn = next_field(&cursor);
                VAConfigAttribType at;
                char *endp = NULL;
                unsigned long value = vn ? strtoul(vn, &endp, 0) : 0;
                if (!an || !vn || sva_attrib_from_name(an, &at) || !endp || *endp) {
                    snprintf(err, err_len, "%s:%d: bad attr line", path, lineno);
                    rc = -1; break;
                }
                sva_attr *na = realloc(p->attrs, sizeof(*na) * (size_t)(p->num_attrs + 1));
                if (!na) { rc = -1; break; }
                p->attrs = na;
                p->attrs[p->num_attrs++] = (sva_attr){ prof, ep, at, (uint32_t)value };
            }
        } else if (!strcmp(key, "init-failure")) {
            char *sn = next_field(&cursor);
            if (!sn || sva_status_from_name(sn, &p->init_status)) {
                snprintf(err, err_len, "%s:%d: unknown VAStatus name", path, lineno);
                rc = -1; break;
            }
            p->init_failure = 1;
            snprintf(p->init_message, sizeof(p->init_message), "%s", cursor);
        } else {
            /* unknown record kinds are ignored so that the format can grow */
        }
    }
    fclose(f);
    if (rc == 0) {
        p->loaded = 1;
    } else {
        sva_personality_free(p);
    }
    return rc;
}
