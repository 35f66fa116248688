/* HDF5 plumbing for checkpoints: error messages, types, files, attributes and
 * the compound tables of the index and shard files. */
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/log.h"

static pthread_once_t g3_ckpt_h5_once = PTHREAD_ONCE_INIT;
static void g3_ckpt_h5_thread_init(void);
static hid_t g3_ckpt_h5_types[G3_CKPT_DTYPE_COUNT];

/* A float type from field positions (bf16 and f16 do not exist natively). */
static hid_t g3_ckpt_h5_make_float(size_t spos, size_t epos, size_t esize, size_t mpos,
                                   size_t msize, size_t ebias)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, spos, epos, esize, mpos, msize);
    H5Tset_offset(t, 0);
    H5Tset_precision(t, 16);
    H5Tset_size(t, 2);
    H5Tset_ebias(t, ebias);
    return t;
}

static void g3_ckpt_h5_init_once(void)
{
    /* No library shutdown at exit: after a read fails a metadata checksum (a damaged file),
     * libhdf5 1.10 keeps the file's shared structure with the entry it could not load, even
     * once every identifier gpt3d opened is closed (H5Fget_obj_count says none is left), and
     * its exit handler then prints "HDF5: infinite loop closing library" and a line of
     * internal codes under gpt3d's own message.  Every file gpt3d writes is flushed and
     * closed explicitly (g3_ckpt_h5_close_written), so the handler has nothing to do that
     * matters.  Effective only before the library's first use, which this is in gpt3d. */
    H5dont_atexit();
    H5open();
    g3_ckpt_h5_types[G3_CKPT_F32]  = H5T_IEEE_F32LE;
    g3_ckpt_h5_types[G3_CKPT_BF16] = g3_ckpt_h5_make_float(15, 7, 8, 0, 7, 127);
    g3_ckpt_h5_types[G3_CKPT_F16]  = g3_ckpt_h5_make_float(15, 10, 5, 0, 10, 15);
    g3_ckpt_h5_types[G3_CKPT_F64]  = H5T_IEEE_F64LE;
    g3_ckpt_h5_types[G3_CKPT_I32]  = H5T_STD_I32LE;
    g3_ckpt_h5_types[G3_CKPT_I64]  = H5T_STD_I64LE;
    g3_ckpt_h5_types[G3_CKPT_U8]   = H5T_STD_U8LE;
}

static void g3_ckpt_h5_init(void)
{
    pthread_once(&g3_ckpt_h5_once, g3_ckpt_h5_init_once);
    g3_ckpt_h5_thread_init();
}

hid_t g3_ckpt_h5_type(g3_ckpt_dtype_t dtype)
{
    g3_ckpt_h5_init();
    return g3_ckpt_h5_types[dtype];
}

int g3_ckpt_h5_dset_matches(hid_t d, hid_t type, int ndim, const int64_t *shape)
{
    hid_t ft = H5Dget_type(d), fs = H5Dget_space(d);
    hsize_t dims[G3_CKPT_MAX_DIMS];
    int ok = ft >= 0 && fs >= 0 && ndim <= G3_CKPT_MAX_DIMS && H5Tequal(ft, type) > 0 &&
             H5Sget_simple_extent_ndims(fs) == ndim;

    if (ok)
        H5Sget_simple_extent_dims(fs, dims, NULL);
    for (int k = 0; ok && k < ndim; k++)
        ok = (int64_t)dims[k] == shape[k];
    if (ft >= 0)
        H5Tclose(ft);
    if (fs >= 0)
        H5Sclose(fs);
    return ok;
}

/* HDF5's error stack is per thread (thread-safe build) and every API call clears it on
 * entry, so a message read after a cleanup call (H5Sclose, H5Dclose, ...) would find it
 * empty.  Instead an "auto" error handler, installed in every thread that touches a
 * checkpoint, keeps the text of the last failure of that thread; g3_ckpt_h5_errmsg hands it
 * out once.  An errno that HDF5 reports inside its text ("errno = 28, error message = ...")
 * is put first, as strerror's words: it is usually the whole story. */
static __thread char g3_ckpt_h5_last_err[512];
static __thread int g3_ckpt_h5_thread_ready;

typedef struct {
    char  *buf;
    size_t size;
    int    n, err;
} g3_ckpt_h5_err_walk_t;

static herr_t g3_ckpt_h5_err_walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
    g3_ckpt_h5_err_walk_t *w = data;
    size_t len = strlen(w->buf);
    const char *e;

    (void)n;
    if (err->desc == NULL || err->desc[0] == '\0')
        return 0;
    e = strstr(err->desc, "errno = ");
    if (e != NULL && w->err == 0) {
        w->err = atoi(e + 8);
        if (w->err > 0)
            return 0;        /* the long sec2 text (time, buffer address, ...) is left out */
    }
    if (w->n >= 3)
        return 0;
    snprintf(w->buf + len, w->size - len, "%s%s", len ? "; " : "", err->desc);
    w->n++;
    return 0;
}

static void g3_ckpt_h5_err_format(hid_t stack, char *buf, size_t size)
{
    g3_ckpt_h5_err_walk_t w = { buf, size, 0, 0 };

    buf[0] = '\0';
    H5Ewalk2(stack, H5E_WALK_UPWARD, g3_ckpt_h5_err_walk_cb, &w);
    if (w.err > 0) {
        char rest[512];
        snprintf(rest, sizeof(rest), "%s", buf);
        snprintf(buf, size, "%s (errno %d)%s%s", strerror(w.err), w.err, rest[0] ? "; " : "", rest);
    }
}

static herr_t g3_ckpt_h5_err_auto(hid_t stack, void *data)
{
    (void)data;
    g3_ckpt_h5_err_format(stack, g3_ckpt_h5_last_err, sizeof(g3_ckpt_h5_last_err));
    return 0;
}

/* Per thread: HDF5 keeps the auto handler per thread in a thread-safe build. */
static void g3_ckpt_h5_thread_init(void)
{
    if (!g3_ckpt_h5_thread_ready) {
        H5Eset_auto2(H5E_DEFAULT, g3_ckpt_h5_err_auto, NULL);
        g3_ckpt_h5_thread_ready = 1;
    }
}

const char *g3_ckpt_h5_errmsg(char *buf, size_t size)
{
    g3_ckpt_h5_thread_init();
    g3_ckpt_h5_err_format(H5E_DEFAULT, buf, size);
    if (buf[0] == '\0' && g3_ckpt_h5_last_err[0] != '\0')
        snprintf(buf, size, "%s", g3_ckpt_h5_last_err);
    g3_ckpt_h5_last_err[0] = '\0';
    if (buf[0] == '\0')
        snprintf(buf, size, "no HDF5 error detail");
    return buf;
}

static hid_t g3_ckpt_h5_fapl(int create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    /* Format version 2: files are written in the HDF5 1.8 file format or later (superblock
     * version 2, object header version 2, new-style groups and dense attribute storage), every
     * one of whose metadata structures carries a checksum that libhdf5 checks on each read: a
     * damaged object header, heap or B-tree fails to open instead of being misread.  The upper
     * bound keeps the files readable by HDF5 1.10 (and h5py built on it); the index's virtual
     * datasets need 1.10's layout message anyway.  Reading needs no bounds: version-1 files
     * (HDF5's oldest formats, no metadata checksums) open as before. */
    if (create)
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110);
    /* Allocate metadata (object headers, attributes, B-trees) from 256 KiB
     * blocks, so a file's metadata sits together instead of between the
     * tensors: a reader with a cold cache then reads it in one sweep. */
    H5Pset_meta_block_size(fapl, 256 << 10);
    return fapl;
}

static void g3_ckpt_h5_lock_hint(const char *msg)
{
    if (strstr(msg, "lock") != NULL)
        g3_error("this file system does not support HDF5 file locking: set HDF5_USE_FILE_LOCKING=FALSE (see docs/checkpoint-format.md, section 9)");
}

g3_status_t g3_ckpt_h5_open(const char *path, hid_t *file_p)
{
    char msg[512];
    hid_t fapl, file;
    struct stat st;

    g3_ckpt_h5_init();
    if (stat(path, &st) != 0) {
        g3_error("checkpoint file %s: %s", path, strerror(errno));
        return errno == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    if (H5Fis_hdf5(path) <= 0) {
        g3_error("checkpoint file %s is not an HDF5 file (%lld bytes): it is foreign or was overwritten; restore it or load another checkpoint",
                 path, (long long)st.st_size);
        return G3_ERR_FORMAT;
    }
    fapl = g3_ckpt_h5_fapl(0);
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (file < 0)
        g3_ckpt_h5_errmsg(msg, sizeof(msg));
    H5Pclose(fapl);
    if (file < 0) {
        g3_error("cannot open checkpoint file %s: %s (truncated or damaged?)", path, msg);
        g3_ckpt_h5_lock_hint(msg);
        return G3_ERR_FORMAT;
    }
    *file_p = file;
    return G3_OK;
}

/* Links and attributes stay "compact" (messages in the object header, which version 2
 * headers checksum) instead of moving to dense storage past 8 of them: dense storage keeps
 * them in fractal heaps whose free-space records readers never look at and whose direct
 * blocks carry no checksum, so a flipped byte there would go unnoticed.  A group's links are
 * then found by a scan of its header in memory: a few thousand pieces per file cost nothing. */
#define G3_CKPT_H5_COMPACT_MAX 65535

hid_t g3_ckpt_h5_gcpl(void)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);

    H5Pset_link_phase_change(gcpl, G3_CKPT_H5_COMPACT_MAX, G3_CKPT_H5_COMPACT_MAX - 1);
    H5Pset_attr_phase_change(gcpl, G3_CKPT_H5_COMPACT_MAX, G3_CKPT_H5_COMPACT_MAX - 1);
    return gcpl;
}

g3_status_t g3_ckpt_h5_parents(hid_t loc, const char *path)
{
    char p[G3_CKPT_NAME_MAX + 16];
    hid_t gcpl = -1;
    g3_status_t st = G3_OK;

    snprintf(p, sizeof(p), "%s", path);
    for (char *s = strchr(p, '/'); st == G3_OK && s != NULL; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (H5Lexists(loc, p, H5P_DEFAULT) <= 0) {
            hid_t g;
            if (gcpl < 0)
                gcpl = g3_ckpt_h5_gcpl();
            g = H5Gcreate2(loc, p, H5P_DEFAULT, gcpl, H5P_DEFAULT);
            if (g < 0)
                st = G3_ERR_IO;
            else
                H5Gclose(g);
        }
        *s = '/';
    }
    if (gcpl >= 0)
        H5Pclose(gcpl);
    return st;
}

g3_status_t g3_ckpt_h5_create(const char *path, int sealed, hid_t *file_p)
{
    char msg[512];
    hid_t fapl, fcpl, file;

    g3_ckpt_h5_init();
    fapl = g3_ckpt_h5_fapl(1);
    fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (fapl < 0 || fcpl < 0) {
        g3_error("cannot create checkpoint file %s: HDF5 refused the file properties", path);
        if (fapl >= 0)
            H5Pclose(fapl);
        if (fcpl >= 0)
            H5Pclose(fcpl);
        return G3_ERR_IO;
    }
    /* the root group */
    H5Pset_link_phase_change(fcpl, G3_CKPT_H5_COMPACT_MAX, G3_CKPT_H5_COMPACT_MAX - 1);
    H5Pset_attr_phase_change(fcpl, G3_CKPT_H5_COMPACT_MAX, G3_CKPT_H5_COMPACT_MAX - 1);
    if (sealed)    /* room for the seal, written by g3_ckpt_index_seal after the close */
        H5Pset_userblock(fcpl, G3_CKPT_SEAL_BYTES);
    file = H5Fcreate(path, H5F_ACC_EXCL, fcpl, fapl);
    if (file < 0)
        g3_ckpt_h5_errmsg(msg, sizeof(msg));
    H5Pclose(fcpl);
    H5Pclose(fapl);
    if (file < 0) {
        g3_error("cannot create checkpoint file %s: %s", path, msg);
        g3_ckpt_h5_lock_hint(msg);
        return G3_ERR_IO;
    }
    *file_p = file;
    return G3_OK;
}

/* ---- the index's seal (format version 3) ---------------------------------------------------
 * HDF5's checksums cover its superblock, object headers and B-trees but not the global heap
 * that holds the virtual datasets' mappings, and libhdf5 trusts what it finds there: one
 * flipped byte in it crashed the reader inside H5S_select_deserialize.  So the whole index is
 * checked by gpt3d before libhdf5 reads a byte of it: the file begins with a 512-byte HDF5
 * user block (which HDF5 and h5py skip) holding the text
 *     "gpt3d-checkpoint-index-seal 1\nsize <file size>\ncrc32c <8 hex digits>\n"
 * and zero bytes up to 512; the CRC-32C is over bytes [512, size).  The reader rebuilds the
 * whole block from the values it parsed and compares all 512 bytes, so every byte of the file
 * is covered. */
#define G3_CKPT_SEAL_MAGIC "gpt3d-checkpoint-index-seal 1\n"
#define G3_CKPT_SEAL_CHUNK (1u << 20)

static void g3_ckpt_seal_format(unsigned char *block, int64_t size, uint32_t crc)
{
    memset(block, 0, G3_CKPT_SEAL_BYTES);
    snprintf((char *)block, G3_CKPT_SEAL_BYTES, "%ssize %lld\ncrc32c %08x\n", G3_CKPT_SEAL_MAGIC,
             (long long)size, crc);
}

/* CRC-32C of bytes [G3_CKPT_SEAL_BYTES, size) of fd.  RET: G3_OK or G3_ERR_IO (errno set). */
static g3_status_t g3_ckpt_seal_crc(int fd, int64_t size, uint32_t *crc_p)
{
    unsigned char *buf = malloc(G3_CKPT_SEAL_CHUNK);
    uint32_t crc = 0;

    if (buf == NULL)
        return G3_ERR_NO_MEMORY;
    for (int64_t off = G3_CKPT_SEAL_BYTES; off < size;) {
        size_t want = size - off < G3_CKPT_SEAL_CHUNK ? (size_t)(size - off) : G3_CKPT_SEAL_CHUNK;
        ssize_t n = pread(fd, buf, want, (off_t)off);
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            free(buf);
            return G3_ERR_IO;
        }
        crc = g3_crc32c(crc, buf, (size_t)n);
        off += n;
    }
    free(buf);
    *crc_p = crc;
    return G3_OK;
}

g3_status_t g3_ckpt_index_seal(const char *path)
{
    unsigned char block[G3_CKPT_SEAL_BYTES];
    struct stat sb;
    uint32_t crc = 0;
    int fd = open(path, O_RDWR);
    g3_status_t st = G3_ERR_IO;

    if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size >= G3_CKPT_SEAL_BYTES &&
        (st = g3_ckpt_seal_crc(fd, sb.st_size, &crc)) == G3_OK) {
        g3_ckpt_seal_format(block, sb.st_size, crc);
        if (pwrite(fd, block, sizeof(block), 0) != (ssize_t)sizeof(block))
            st = G3_ERR_IO;
    }
    if (st != G3_OK)
        g3_error("cannot write the checksum block of %s: %s; the save is abandoned (check free space and quota)",
                 path, fd < 0 || st == G3_ERR_IO ? strerror(errno) : "out of memory");
    if (fd >= 0)
        close(fd);
    return st;
}

g3_status_t g3_ckpt_index_open(const char *path, hid_t *file_p, int *sealed_p)
{
    static const unsigned char hdf5_sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
    unsigned char block[G3_CKPT_SEAL_BYTES], want[G3_CKPT_SEAL_BYTES];
    char text[G3_CKPT_SEAL_BYTES + 1];
    long long size = -1;
    unsigned int crc = 0;
    uint32_t got = 0;
    struct stat sb;
    ssize_t n;
    int fd;
    g3_status_t st;

    *sealed_p = 0;
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        g3_error("checkpoint file %s: %s", path, strerror(e));
        if (fd >= 0)
            close(fd);
        return e == ENOENT ? G3_ERR_NOT_FOUND : G3_ERR_IO;
    }
    n = pread(fd, block, sizeof(block), 0);
    if (n >= 8 && memcmp(block, hdf5_sig, 8) == 0) {   /* versions 1 and 2: no seal */
        close(fd);
        return g3_ckpt_h5_open(path, file_p);
    }
    memcpy(text, block, n > 0 ? (size_t)n : 0);
    text[n > 0 ? n : 0] = '\0';
    if (n != (ssize_t)sizeof(block) ||
        strncmp(text, G3_CKPT_SEAL_MAGIC, strlen(G3_CKPT_SEAL_MAGIC)) != 0 ||
        sscanf(text + strlen(G3_CKPT_SEAL_MAGIC), "size %lld\ncrc32c %8x\n", &size, &crc) != 2 ||
        (g3_ckpt_seal_format(want, size, crc), memcmp(want, block, sizeof(block)) != 0)) {
        g3_error("checkpoint index %s begins with neither gpt3d's checksum block nor an HDF5 signature (%lld bytes): it is damaged, foreign or was overwritten; restore it or load another checkpoint (--load-fallback)",
                 path, (long long)sb.st_size);
        close(fd);
        return G3_ERR_FORMAT;
    }
    if (size != (long long)sb.st_size) {
        g3_error("checkpoint index %s is %lld bytes but its checksum block says %lld: it was truncated or damaged; load another checkpoint (--load-fallback)",
                 path, (long long)sb.st_size, size);
        close(fd);
        return G3_ERR_FORMAT;
    }
    st = g3_ckpt_seal_crc(fd, size, &got);
    close(fd);
    if (st != G3_OK) {
        g3_error("cannot read checkpoint index %s: %s", path, strerror(errno));
        return st;
    }
    if (got != crc) {
        g3_error("checkpoint index %s fails its checksum (stored crc32c %08x, computed %08x): the file is damaged; load another checkpoint (--load-fallback)",
                 path, crc, got);
        return G3_ERR_FORMAT;
    }
    *sealed_p = 1;
    return g3_ckpt_h5_open(path, file_p);
}

g3_status_t g3_ckpt_h5_close_written(hid_t file, const char *path, int quiet)
{
    char msg[512];
    void *handle = NULL;

    if (H5Fflush(file, H5F_SCOPE_LOCAL) >= 0)
        return H5Fclose(file) >= 0 ? G3_OK : G3_ERR_IO;
    g3_ckpt_h5_errmsg(msg, sizeof(msg));
    if (!quiet)
        g3_error("cannot write %s: %s; the save is abandoned (check free space and quota)", path, msg);
    /* HDF5 1.10 leaves a file whose close failed half-freed, and its exit handler then
     * crashes on it: give the file's space back (it is being abandoned) so that the final
     * flush of the close succeeds, and close it for real. */
    if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) >= 0 && handle != NULL &&
        ftruncate(*(int *)handle, 0) != 0)
        g3_warn("cannot release the space of the abandoned %s: %s", path, strerror(errno));
    H5Fclose(file);
    return G3_ERR_IO;
}

g3_status_t g3_ckpt_fsync_path(const char *path, int is_dir)
{
    int fd = open(path, (is_dir ? O_DIRECTORY : 0) | O_RDONLY);

    if (fd < 0) {
        g3_error("cannot open %s to sync it to disk: %s", path, strerror(errno));
        return G3_ERR_IO;
    }
    if (fsync(fd) != 0 && !(is_dir && (errno == EINVAL || errno == EBADF))) {
        g3_error("fsync %s failed: %s; the disk may be full or failing", path, strerror(errno));
        close(fd);
        return G3_ERR_IO;
    }
    close(fd);
    return G3_OK;
}

int g3_ckpt_link_exists(hid_t loc, const char *path)
{
    char p[G3_CKPT_NAME_MAX + 16];

    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (H5Lexists(loc, p, H5P_DEFAULT) <= 0)
                return 0;
            if (c == '\0')
                return 1;
            *s = c;
        }
    }
}

/* ---- attributes ---------------------------------------------------------------- */

static g3_status_t g3_ckpt_attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
                                      hid_t space, const void *v)
{
    hid_t a;
    herr_t rc;

    if (H5Aexists(obj, name) > 0)
        H5Adelete(obj, name);
    a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        return G3_ERR_IO;
    rc = H5Awrite(a, mtype, v);
    H5Aclose(a);
    return rc < 0 ? G3_ERR_IO : G3_OK;
}

g3_status_t g3_ckpt_attr_write_str(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    g3_status_t st;

    H5Tset_size(t, strlen(value) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    st = g3_ckpt_attr_write(obj, name, t, t, s, value);
    H5Sclose(s);
    H5Tclose(t);
    return st;
}

/* n values at v as a 1-D attribute, or one as a scalar (n < 0). */
static g3_status_t g3_ckpt_attr_write_num(hid_t obj, const char *name, hid_t ftype, hid_t mtype,
                                          const void *v, int n)
{
    hsize_t dims = n >= 0 ? (hsize_t)n : 1;
    hid_t s = n >= 0 ? H5Screate_simple(1, &dims, NULL) : H5Screate(H5S_SCALAR);
    g3_status_t st = g3_ckpt_attr_write(obj, name, ftype, mtype, s, v);
    H5Sclose(s);
    return st;
}

g3_status_t g3_ckpt_attr_write_i64(hid_t obj, const char *name, const int64_t *v, int n)
{
    return g3_ckpt_attr_write_num(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v, n);
}

g3_status_t g3_ckpt_attr_write_i32(hid_t obj, const char *name, int32_t v)
{
    return g3_ckpt_attr_write_num(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &v, -1);
}

g3_status_t g3_ckpt_attr_write_u32(hid_t obj, const char *name, uint32_t v)
{
    return g3_ckpt_attr_write_num(obj, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &v, -1);
}

static g3_status_t g3_ckpt_attr_open(hid_t obj, const char *name, H5T_class_t cls, hid_t *a_p,
                                     hssize_t *npoints_p, size_t *size_p)
{
    hid_t a, t, s;
    H5T_class_t c;

    htri_t exists = H5Aexists(obj, name);

    if (exists == 0)
        return G3_ERR_NOT_FOUND;
    if (exists < 0)
        return G3_ERR_IO;       /* the object's header cannot be read: damaged */
    a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return G3_ERR_FORMAT;
    t = H5Aget_type(a);
    c = H5Tget_class(t);
    *size_p = H5Tget_size(t);
    H5Tclose(t);
    s = H5Aget_space(a);
    *npoints_p = H5Sget_simple_extent_npoints(s);
    H5Sclose(s);
    if (c != cls) {
        H5Aclose(a);
        return G3_ERR_FORMAT;
    }
    *a_p = a;
    return G3_OK;
}

g3_status_t g3_ckpt_attr_read_str(hid_t obj, const char *name, char *buf, size_t size)
{
    hid_t a, t;
    hssize_t np;
    size_t sz;
    g3_status_t st = g3_ckpt_attr_open(obj, name, H5T_STRING, &a, &np, &sz);
    herr_t rc;

    if (st != G3_OK)
        return st;
    t = H5Aget_type(a);
    if (H5Tis_variable_str(t) > 0 || np != 1 || sz >= size) {
        H5Tclose(t);
        H5Aclose(a);
        return G3_ERR_FORMAT;
    }
    memset(buf, 0, size);
    rc = H5Aread(a, t, buf);
    H5Tclose(t);
    H5Aclose(a);
    buf[sz] = '\0';
    return rc < 0 ? G3_ERR_FORMAT : G3_OK;
}

static g3_status_t g3_ckpt_attr_read_num(hid_t obj, const char *name, hid_t mtype, void *v, int n)
{
    hid_t a;
    hssize_t np;
    size_t sz;
    g3_status_t st = g3_ckpt_attr_open(obj, name, H5Tget_class(mtype), &a, &np, &sz);
    herr_t rc;

    if (st != G3_OK)
        return st;
    if (np != n) {
        H5Aclose(a);
        return G3_ERR_FORMAT;
    }
    rc = H5Aread(a, mtype, v);
    H5Aclose(a);
    return rc < 0 ? G3_ERR_FORMAT : G3_OK;
}

g3_status_t g3_ckpt_attr_read_i64(hid_t obj, const char *name, int64_t *v, int n)
{
    return g3_ckpt_attr_read_num(obj, name, H5T_NATIVE_INT64, v, n);
}

g3_status_t g3_ckpt_attr_read_i32(hid_t obj, const char *name, int32_t *v)
{
    return g3_ckpt_attr_read_num(obj, name, H5T_NATIVE_INT32, v, 1);
}

g3_status_t g3_ckpt_attr_read_u32(hid_t obj, const char *name, uint32_t *v)
{
    return g3_ckpt_attr_read_num(obj, name, H5T_NATIVE_UINT32, v, 1);
}

g3_status_t g3_ckpt_check_format(hid_t file, const char *path, const char *format, int *version_p)
{
    char got[128];
    int32_t version = 0;
    g3_status_t st = g3_ckpt_attr_read_str(file, "format", got, sizeof(got));

    if (st == G3_ERR_IO) {
        char msg[512];
        g3_error("%s is damaged: the attributes of its root group cannot be read (%s); restore it or load another checkpoint (--load-fallback)",
                 path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        return G3_ERR_FORMAT;
    }
    if (st != G3_OK) {
        g3_error("%s is an HDF5 file but not a gpt3d checkpoint file (no 'format' attribute; expected '%s')",
                 path, format);
        return G3_ERR_FORMAT;
    }
    if (strcmp(got, format) != 0) {
        g3_error("%s is not a %s file: its format attribute is '%s'", path, format, got);
        return G3_ERR_FORMAT;
    }
    if (g3_ckpt_attr_read_i32(file, "format_version", &version) != G3_OK) {
        g3_error("%s has no readable 'format_version' attribute: the file is damaged", path);
        return G3_ERR_FORMAT;
    }
    if (version < 1 || version > G3_CKPT_FORMAT_VERSION) {
        g3_error("%s has %s format version %d; this gpt3d reads versions 1 to %d: use the gpt3d version that wrote it, or convert it with that version",
                 path, format, (int)version, G3_CKPT_FORMAT_VERSION);
        return G3_ERR_VERSION;
    }
    if (version_p)
        *version_p = (int)version;
    return G3_OK;
}

const char *const g3_ckpt_progress_names[G3_CKPT_NPROGRESS] = {
    "iteration", "consumed_samples", "consumed_tokens"
};

uint32_t g3_ckpt_progress_crc(int64_t value)
{
    unsigned char le[8];

    for (int k = 0; k < 8; k++)
        le[k] = (unsigned char)((uint64_t)value >> (8 * k));
    return g3_crc32c(0, le, sizeof(le));
}

/* ---- tables ---------------------------------------------------------------------- */

typedef enum { F_I32, F_U32, F_I64, F_I64x4, F_STR } g3_ckpt_field_kind_t;
typedef struct {
    const char          *name;
    size_t               offset;
    g3_ckpt_field_kind_t kind;
    size_t               len;      /* F_STR: bytes */
} g3_ckpt_field_t;

#define FLD(T, m, k, l) { #m, offsetof(T, m), k, l }
/* The tensor description a /manifest row and a /tensors row both carry, in two runs of
 * fields that keep their places in both tables (the order is the file format's): its type
 * and global shape, and its sharding rule. */
#define G3_CKPT_TYPE_FIELDS(T)                                                          \
    FLD(T, dtype, F_STR, 8), FLD(T, kind, F_I32, 0), FLD(T, ndim, F_I32, 0),            \
        FLD(T, shape, F_I64x4, 0)
#define G3_CKPT_RULE_FIELDS(T)                                                          \
    FLD(T, tp_dim, F_I32, 0), FLD(T, tp_parts, F_I32, 0), FLD(T, pp_layer, F_I32, 0),   \
        FLD(T, pad_dim, F_I32, 0), FLD(T, unpadded, F_I64, 0)
/* A piece's box (a /manifest row and a /pieces row). */
#define G3_CKPT_BOX_FIELDS(T) FLD(T, offset, F_I64x4, 0), FLD(T, extent, F_I64x4, 0)

static const g3_ckpt_field_t g3_ckpt_manifest_fields[] = {
    FLD(g3_ckpt_mrow_t, tensor, F_STR, G3_CKPT_NAME_MAX),
    FLD(g3_ckpt_mrow_t, piece, F_I32, 0),
    G3_CKPT_TYPE_FIELDS(g3_ckpt_mrow_t),
    G3_CKPT_BOX_FIELDS(g3_ckpt_mrow_t),
    FLD(g3_ckpt_mrow_t, crc32c, F_U32, 0),
    G3_CKPT_RULE_FIELDS(g3_ckpt_mrow_t),
    { NULL, 0, 0, 0 }
};

static const g3_ckpt_field_t g3_ckpt_files_fields[] = {
    FLD(g3_ckpt_frow_t, name, F_STR, 64), FLD(g3_ckpt_frow_t, kind, F_I32, 0),
    /* the writer's coordinates */
    FLD(g3_ckpt_frow_t, tp, F_I32, 0), FLD(g3_ckpt_frow_t, pp, F_I32, 0),
    FLD(g3_ckpt_frow_t, dp, F_I32, 0),
    FLD(g3_ckpt_frow_t, npieces, F_I64, 0), FLD(g3_ckpt_frow_t, nbytes, F_I64, 0),
    { NULL, 0, 0, 0 }
};

static const g3_ckpt_field_t g3_ckpt_tensors_fields[] = {
    FLD(g3_ckpt_trow_t, name, F_STR, G3_CKPT_NAME_MAX),
    G3_CKPT_TYPE_FIELDS(g3_ckpt_trow_t),
    G3_CKPT_RULE_FIELDS(g3_ckpt_trow_t),
    FLD(g3_ckpt_trow_t, first_piece, F_I64, 0),
    FLD(g3_ckpt_trow_t, npieces, F_I64, 0),
    { NULL, 0, 0, 0 }
};

static const g3_ckpt_field_t g3_ckpt_pieces_fields[] = {
    /* which piece of which tensor, in which file */
    FLD(g3_ckpt_prow_t, tensor, F_I32, 0), FLD(g3_ckpt_prow_t, file, F_I32, 0),
    FLD(g3_ckpt_prow_t, piece, F_I32, 0),
    G3_CKPT_BOX_FIELDS(g3_ckpt_prow_t),
    FLD(g3_ckpt_prow_t, nbytes, F_I64, 0), FLD(g3_ckpt_prow_t, crc32c, F_U32, 0),
    { NULL, 0, 0, 0 }
};

static const g3_ckpt_field_t *g3_ckpt_table_fields(g3_ckpt_table_t table, size_t *size_p)
{
    switch (table) {
    case G3_CKPT_TABLE_MANIFEST: *size_p = sizeof(g3_ckpt_mrow_t); return g3_ckpt_manifest_fields;
    case G3_CKPT_TABLE_FILES:    *size_p = sizeof(g3_ckpt_frow_t); return g3_ckpt_files_fields;
    case G3_CKPT_TABLE_TENSORS:  *size_p = sizeof(g3_ckpt_trow_t); return g3_ckpt_tensors_fields;
    case G3_CKPT_TABLE_PIECES:   *size_p = sizeof(g3_ckpt_prow_t); return g3_ckpt_pieces_fields;
    }
    *size_p = 0;
    return NULL;
}

static hid_t g3_ckpt_table_type(g3_ckpt_table_t table, int file)
{
    size_t size, off = 0;
    const g3_ckpt_field_t *f = g3_ckpt_table_fields(table, &size);
    hsize_t four = G3_CKPT_MAX_DIMS;
    hid_t t;

    /* the file type is packed: first compute its size */
    if (file) {
        size = 0;
        for (const g3_ckpt_field_t *g = f; g->name; g++)
            size += g->kind == F_STR ? g->len : g->kind == F_I64 ? 8 : g->kind == F_I64x4 ? 32 : 4;
    }
    t = H5Tcreate(H5T_COMPOUND, size);
    for (; f->name; f++) {
        hid_t ft;
        size_t fsz;
        switch (f->kind) {
        case F_I32:  ft = H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32); break;
        case F_U32:  ft = H5Tcopy(file ? H5T_STD_U32LE : H5T_NATIVE_UINT32); break;
        case F_I64:  ft = H5Tcopy(file ? H5T_STD_I64LE : H5T_NATIVE_INT64); break;
        case F_I64x4:
            ft = H5Tarray_create2(file ? H5T_STD_I64LE : H5T_NATIVE_INT64, 1, &four);
            break;
        default:
            ft = H5Tcopy(H5T_C_S1);
            H5Tset_size(ft, f->len);
            H5Tset_strpad(ft, H5T_STR_NULLTERM);
            break;
        }
        fsz = H5Tget_size(ft);
        H5Tinsert(t, f->name, file ? off : f->offset, ft);
        off += fsz;
        H5Tclose(ft);
    }
    return t;
}

static g3_status_t g3_ckpt_dataset_raw_crc(hid_t d, uint32_t *crc_p)
{
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    hssize_t n = H5Sget_simple_extent_npoints(s);
    size_t bytes = n > 0 ? (size_t)n * H5Tget_size(t) : 0;
    void *buf = malloc(bytes ? bytes : 1);
    g3_status_t st = G3_OK;

    if (buf == NULL)
        st = G3_ERR_NO_MEMORY;
    else if (bytes > 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
        st = G3_ERR_FORMAT;
    if (st == G3_OK)
        *crc_p = g3_crc32c(0, buf, bytes);
    free(buf);
    H5Sclose(s);
    H5Tclose(t);
    return st;
}

hid_t g3_ckpt_select_rows(hid_t fspace, int ndim, const int64_t *extent, int64_t r0, int64_t nr)
{
    hsize_t off[G3_CKPT_MAX_DIMS] = { 0 }, cnt[G3_CKPT_MAX_DIMS];

    for (int k = 0; k < ndim; k++)
        cnt[k] = (hsize_t)extent[k];
    off[0] = (hsize_t)r0;
    cnt[0] = (hsize_t)nr;
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, off, NULL, cnt, NULL);
    return H5Screate_simple(ndim, cnt, NULL);
}

g3_status_t g3_ckpt_dataset_io(hid_t d, hid_t type, int ndim, const int64_t *extent, size_t esz,
                               void *buf, int write, uint32_t *crc_p)
{
    int64_t row = g3_ckpt_box_volume(ndim, extent) / extent[0];
    int64_t rows = (int64_t)((8u << 20) / ((size_t)row * esz));
    hid_t fspace = H5Dget_space(d);
    uint32_t crc = crc_p ? *crc_p : 0;
    g3_status_t st = G3_OK;

    if (rows < 1)
        rows = 1;
    for (int64_t r0 = 0; st == G3_OK && r0 < extent[0]; r0 += rows) {
        int64_t nr = extent[0] - r0 < rows ? extent[0] - r0 : rows;
        char *p = (char *)buf + (size_t)(r0 * row) * esz;
        size_t n = (size_t)(nr * row) * esz;
        hid_t mspace = g3_ckpt_select_rows(fspace, ndim, extent, r0, nr);

        double t0 = g3_ckpt_timing_now(g3_ckpt_tm);

        if (write) {
            if (crc_p)
                crc = g3_crc32c(crc, p, n);
            g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_CHECKSUM, &t0);
            if (H5Dwrite(d, type, mspace, fspace, H5P_DEFAULT, p) < 0)
                st = G3_ERR_IO;
            g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_WRITE, &t0);
        } else {
            if (H5Dread(d, type, mspace, fspace, H5P_DEFAULT, p) < 0)
                st = G3_ERR_FORMAT;
            g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_READ, &t0);
            if (st == G3_OK && crc_p)
                crc = g3_crc32c(crc, p, n);
            g3_ckpt_timing_add(g3_ckpt_tm, G3_CKPT_T_VERIFY, &t0);
        }
        H5Sclose(mspace);
    }
    H5Sclose(fspace);
    if (crc_p)
        *crc_p = crc;
    return st;
}

g3_status_t g3_ckpt_dataset_check_crc(hid_t d, const char *name, const char *path)
{
    uint32_t want = 0, got = 0;

    if (g3_ckpt_attr_read_u32(d, "crc32c", &want) != G3_OK) {
        g3_error("%s: /%s has no crc32c attribute: the file is damaged or was not written by gpt3d", path, name);
        return G3_ERR_FORMAT;
    }
    if (g3_ckpt_dataset_raw_crc(d, &got) != G3_OK) {
        g3_error("%s: cannot read /%s (truncated or damaged file?)", path, name);
        return G3_ERR_FORMAT;
    }
    if (got != want) {
        g3_error("checksum mismatch in %s, dataset /%s: stored crc32c %08x, computed %08x: the file is corrupt", path,
                 name, want, got);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

g3_status_t g3_ckpt_table_write(hid_t loc, const char *name, g3_ckpt_table_t table,
                                const void *rows, size_t nrows, const char *path)
{
    hid_t ft = g3_ckpt_table_type(table, 1), mt = g3_ckpt_table_type(table, 0);
    hsize_t dims = nrows;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t d = H5Dcreate2(loc, name, ft, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    g3_status_t st = G3_OK;
    char msg[512];

    if (d < 0 || (nrows > 0 && H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)) {
        g3_error("cannot write table /%s of %s: %s", name, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        st = G3_ERR_IO;
    } else {
        uint32_t crc = 0;
        st = g3_ckpt_dataset_raw_crc(d, &crc);
        if (st == G3_OK)
            st = g3_ckpt_attr_write_u32(d, "crc32c", crc);
        if (st != G3_OK)
            g3_error("cannot checksum table /%s of %s: %s", name, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
    }
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(space);
    H5Tclose(ft);
    H5Tclose(mt);
    return st;
}

g3_status_t g3_ckpt_table_read(hid_t loc, const char *name, g3_ckpt_table_t table,
                               void **rows_p, size_t *nrows_p, const char *path)
{
    size_t rowsize;
    hid_t mt, d, space;
    hssize_t n;
    void *rows;
    char msg[512];

    g3_ckpt_table_fields(table, &rowsize);
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        g3_error("%s has no /%s table: the file is damaged or not a complete checkpoint file", path, name);
        return G3_ERR_FORMAT;
    }
    d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) {
        g3_error("cannot open table /%s of %s: %s", name, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        return G3_ERR_FORMAT;
    }
    if (g3_ckpt_dataset_check_crc(d, name, path) != G3_OK) {
        H5Dclose(d);
        return G3_ERR_FORMAT;
    }
    space = H5Dget_space(d);
    n = H5Sget_simple_extent_npoints(space);
    H5Sclose(space);
    rows = calloc(n > 0 ? (size_t)n : 1, rowsize);
    if (rows == NULL) {
        H5Dclose(d);
        g3_error("out of memory reading table /%s of %s", name, path);
        return G3_ERR_NO_MEMORY;
    }
    mt = g3_ckpt_table_type(table, 0);
    if (n > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0) {
        g3_error("cannot read table /%s of %s: %s (the file is damaged or from an incompatible writer)",
                 name, path, g3_ckpt_h5_errmsg(msg, sizeof(msg)));
        H5Tclose(mt);
        H5Dclose(d);
        free(rows);
        return G3_ERR_FORMAT;
    }
    H5Tclose(mt);
    H5Dclose(d);
    *rows_p = rows;
    *nrows_p = (size_t)n;
    return G3_OK;
}
