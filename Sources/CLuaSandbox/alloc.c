// The group's allocator: every block charged to a script's ledger, against its memory cap,
// and small blocks kept in the group's pool for reuse.
#include "sandbox_internal.h"

/// The header of every block: 16 bytes, so blocks keep malloc's alignment.
typedef struct block_header {
    sbx_ledger *ledger;
    size_t capacity;  // with the header, for a block of the group's pool; 0 for malloc's own
} block_header;

// What every script of the process holds together, and its cap. The groups run on threads
// of their own, so the count is atomic; each group reserves from it in steps of
// SBX_WORKER_RESERVE_STEP and keeps what it has not used yet (`worker_slack`), so that
// scripts allocating on several threads do not all contend for one cache line. The cap can
// so refuse up to a step per group early. The count never passes the cap.
#define SBX_WORKER_RESERVE_STEP (64 << 10)
static atomic_size_t worker_used;
static atomic_size_t worker_limit = SIZE_MAX;

void sbx_set_worker_memory_limit(size_t limit) { atomic_store(&worker_limit, limit); }
size_t sbx_worker_memory_used(void) { return atomic_load(&worker_used); }

static int worker_reserve_exactly(size_t bytes) {
    size_t limit = atomic_load_explicit(&worker_limit, memory_order_relaxed);
    size_t used = atomic_load_explicit(&worker_used, memory_order_relaxed);
    do {
        if (bytes > limit - used) return 0;  // used <= limit always holds: no overflow
    } while (!atomic_compare_exchange_weak_explicit(&worker_used, &used, used + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 1;
}

/// Takes `bytes` for the group from the worker's count; 0 when the cap refuses them.
static int worker_reserve(sbx_group *G, size_t bytes) {
    if (bytes <= G->worker_slack) {
        G->worker_slack -= bytes;
        return 1;
    }
    size_t missing = bytes - G->worker_slack;
    size_t step = missing > SBX_WORKER_RESERVE_STEP ? missing : SBX_WORKER_RESERVE_STEP;
    if (worker_reserve_exactly(step)) {
        G->worker_slack += step - bytes;
        return 1;
    }
    if (step == missing || !worker_reserve_exactly(missing)) return 0;
    G->worker_slack = 0;
    return 1;
}

static void worker_release(sbx_group *G, size_t bytes) {
    G->worker_slack += bytes;
    if (G->worker_slack > 2 * SBX_WORKER_RESERVE_STEP) {
        atomic_fetch_sub_explicit(&worker_used, G->worker_slack - SBX_WORKER_RESERVE_STEP, memory_order_relaxed);
        G->worker_slack = SBX_WORKER_RESERVE_STEP;
    }
}

void hh_worker_release_slack(sbx_group *G) {
    atomic_fetch_sub_explicit(&worker_used, G->worker_slack, memory_order_relaxed);
    G->worker_slack = 0;
}

void hh_ledger_free(sbx_ledger *ledger) {
    free(ledger->releases);
    free(ledger);
}

static void ledger_debit(sbx_group *G, sbx_ledger *ledger, size_t size) {
    ledger->used -= size;
    worker_release(G, size);
    if (--ledger->blocks == 0 && ledger->closed) hh_ledger_free(ledger);
}

/// The pool capacity of a block of `bytes` (with its header); 0 when malloc keeps it.
static size_t pool_capacity(size_t bytes) {
    size_t capacity = (bytes + SBX_POOL_STEP - 1) & ~(size_t)(SBX_POOL_STEP - 1);
    return capacity <= SBX_POOL_LARGEST ? capacity : 0;
}

static block_header *block_new(sbx_group *G, size_t bytes) {
    size_t capacity = pool_capacity(bytes);
    block_header *block;
    if (capacity && G->pool[capacity / SBX_POOL_STEP]) {
        pooled_block *reused = G->pool[capacity / SBX_POOL_STEP];
        G->pool[capacity / SBX_POOL_STEP] = reused->next;
        // The class's next block is likely among the next allocations, cold after a pause.
        if (reused->next) __builtin_prefetch(reused->next, 1);
        G->pooled_bytes -= capacity;
        block = (block_header *)reused;
    } else {
        block = malloc(capacity ? capacity : bytes);
    }
    if (block) block->capacity = capacity;
    return block;
}

static void block_release(sbx_group *G, block_header *block) {
    if (!block->capacity || G->pooled_bytes + block->capacity > SBX_POOL_BYTES) {
        free(block);
        return;
    }
    G->pooled_bytes += block->capacity;
    pooled_block *freed = (pooled_block *)block;
    freed->next = G->pool[block->capacity / SBX_POOL_STEP];
    G->pool[block->capacity / SBX_POOL_STEP] = freed;
}

size_t sbx_group_pooled_bytes(sbx_group *G) {
    hh_group_lock(G);
    size_t bytes = G->pooled_bytes;
    hh_group_unlock(G);
    return bytes;
}

/// A block of `bytes` with what `header`'s block holds, in place when the size class
/// stays the same; NULL when there is no memory (the old block is then unchanged).
static block_header *block_resize(sbx_group *G, block_header *header, size_t old, size_t bytes) {
    size_t capacity = pool_capacity(bytes);
    if (capacity && capacity == header->capacity) return header;
    if (!capacity && !header->capacity) return realloc(header, bytes);
    block_header *block = block_new(G, bytes);
    if (!block) return NULL;
    size_t kept = bytes - sizeof *header;
    memcpy(block + 1, header + 1, old < kept ? old : kept);
    block->ledger = header->ledger;
    block_release(G, header);
    return block;
}

/// New blocks are charged to the running script; a resized block stays with its own.
void *hh_capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    sbx_group *G = ud;
    block_header *header = ptr ? (block_header *)ptr - 1 : NULL;
    if (nsize == 0) {
        if (header) {
            ledger_debit(G, header->ledger, osize);
            block_release(G, header);
        }
        return NULL;
    }
    sbx_ledger *ledger = header ? header->ledger : G->current ? G->current->ledger : &G->base;
    size_t old = header ? osize : 0;
    // Written so it cannot overflow: used <= limit always holds.
    if (nsize > old && nsize - old > ledger->limit - ledger->used) return NULL;
    if (nsize > SIZE_MAX - sizeof *header - SBX_POOL_STEP) return NULL;
    size_t growth = nsize > old ? nsize - old : 0;
    if (growth && !worker_reserve(G, growth)) {
        ledger->worker_refused = 1;
        return NULL;
    }
    block_header *block = header ? block_resize(G, header, old, sizeof *header + nsize)
                                 : block_new(G, sizeof *header + nsize);
    if (!block) {
        if (growth) worker_release(G, growth);
        return nsize <= old ? ptr : NULL;  // never fail a shrink
    }
    if (!header) {
        block->ledger = ledger;
        ledger->blocks++;
    }
    if (old > nsize) worker_release(G, old - nsize);
    ledger->used = ledger->used - old + nsize;
    return block + 1;
}
