#pragma once

// libsystemd's sd-bus, opened with dlopen on first use: most processes of this executable
// (the workers, a daemon following interfaces only) never speak D-Bus, and linking
// libsystemd would load it and five more libraries (libgcrypt, liblzma, libzstd, liblz4,
// libcap) at every start, in every one of them. Its header gives the types; the calls go
// through the hh_ functions below, so that nothing here links libsystemd.
#include <systemd/sd-bus.h>

/// Opens libsystemd.so.0 once: NULL when every function below is usable, else why not.
/// The functions below may be called only after it returned NULL.
const char *hh_systemd_load(void);

// The sd-bus functions the project calls that return a value (only non-variadic ones: Swift
// cannot call the others): return type, name, parameters, the parameters' names.
#define HH_SD_BUS_FUNCTIONS(F)                                                                                      \
    F(int, sd_bus_open_user, (sd_bus **ret), (ret))                                                                 \
    F(int, sd_bus_open_system, (sd_bus **ret), (ret))                                                               \
    F(int, sd_bus_new, (sd_bus **ret), (ret))                                                                       \
    F(int, sd_bus_set_address, (sd_bus *bus, const char *address), (bus, address))                                  \
    F(int, sd_bus_set_bus_client, (sd_bus *bus, int b), (bus, b))                                                   \
    F(int, sd_bus_start, (sd_bus *bus), (bus))                                                                      \
    F(sd_bus *, sd_bus_unref, (sd_bus *bus), (bus))                                                                 \
    F(sd_bus *, sd_bus_close_unref, (sd_bus *bus), (bus))                                                           \
    F(int, sd_bus_call, (sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error,                    \
                         sd_bus_message **reply), (bus, m, usec, ret_error, reply))                                 \
    F(int, sd_bus_send, (sd_bus *bus, sd_bus_message *m, uint64_t *cookie), (bus, m, cookie))                       \
    F(int, sd_bus_add_match, (sd_bus *bus, sd_bus_slot **slot, const char *match,                                   \
                              sd_bus_message_handler_t callback, void *userdata),                                   \
      (bus, slot, match, callback, userdata))                                                                       \
    F(int, sd_bus_add_object, (sd_bus *bus, sd_bus_slot **slot, const char *path,                                   \
                               sd_bus_message_handler_t callback, void *userdata),                                  \
      (bus, slot, path, callback, userdata))                                                                        \
    F(int, sd_bus_process, (sd_bus *bus, sd_bus_message **r), (bus, r))                                             \
    F(int, sd_bus_get_fd, (sd_bus *bus), (bus))                                                                     \
    F(int, sd_bus_get_events, (sd_bus *bus), (bus))                                                                 \
    F(int, sd_bus_get_timeout, (sd_bus *bus, uint64_t *timeout_usec), (bus, timeout_usec))                          \
    F(int, sd_bus_reply_method_error, (sd_bus_message *call, const sd_bus_error *e), (call, e))                     \
    F(int, sd_bus_message_new_method_call, (sd_bus *bus, sd_bus_message **m, const char *destination,               \
                                            const char *path, const char *interface, const char *member),           \
      (bus, m, destination, path, interface, member))                                                               \
    F(int, sd_bus_message_new_method_return, (sd_bus_message *call, sd_bus_message **m), (call, m))                 \
    F(sd_bus_message *, sd_bus_message_ref, (sd_bus_message *m), (m))                                               \
    F(sd_bus_message *, sd_bus_message_unref, (sd_bus_message *m), (m))                                             \
    F(const char *, sd_bus_message_get_member, (sd_bus_message *m), (m))                                            \
    F(const char *, sd_bus_message_get_interface, (sd_bus_message *m), (m))                                         \
    F(const char *, sd_bus_message_get_path, (sd_bus_message *m), (m))                                              \
    F(const char *, sd_bus_message_get_sender, (sd_bus_message *m), (m))                                            \
    F(int, sd_bus_message_rewind, (sd_bus_message *m, int complete), (m, complete))                                 \
    F(int, sd_bus_message_peek_type, (sd_bus_message *m, char *type, const char **contents), (m, type, contents))   \
    F(int, sd_bus_message_read_basic, (sd_bus_message *m, char type, void *p), (m, type, p))                        \
    F(int, sd_bus_message_read_array, (sd_bus_message *m, char type, const void **ptr, size_t *size),               \
      (m, type, ptr, size))                                                                                         \
    F(int, sd_bus_message_append_basic, (sd_bus_message *m, char type, const void *p), (m, type, p))                \
    F(int, sd_bus_message_enter_container, (sd_bus_message *m, char type, const char *contents), (m, type, contents)) \
    F(int, sd_bus_message_exit_container, (sd_bus_message *m), (m))                                                 \
    F(int, sd_bus_message_open_container, (sd_bus_message *m, char type, const char *contents), (m, type, contents)) \
    F(int, sd_bus_message_close_container, (sd_bus_message *m), (m))

#define HH_SD_BUS_DECLARE(type, name, parameters, arguments) type hh_##name parameters;
HH_SD_BUS_FUNCTIONS(HH_SD_BUS_DECLARE)
#undef HH_SD_BUS_DECLARE
void hh_sd_bus_error_free(sd_bus_error *e);
