/*
 * e3_check.h: public API of the checker (e3fsck): consistency passes,
 * journal handling and layout analysis, with findings returned in a report.
 */
#ifndef E3_CHECK_H
#define E3_CHECK_H

#endif
