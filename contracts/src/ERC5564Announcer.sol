// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ERC-5564 Announcer
/// @notice The singleton every stealth payment is announced through. Same
/// interface and event as the canonical deployment at
/// 0x55649E01B5Df198D18D95b5cc5051630cfD45564; the Veil devnets place this
/// contract's runtime code at that address in their genesis.
contract ERC5564Announcer {
    /// @notice Emitted when something is sent to a stealth address.
    /// @param schemeId 1 for secp256k1 with 1-byte view tags.
    /// @param stealthAddress The computed stealth address of the recipient.
    /// @param caller The caller of `announce` (Veil's StealthSender for Veil payments).
    /// @param ephemeralPubKey The sender's ephemeral public key (33 bytes, compressed).
    /// @param metadata Byte 0: view tag; bytes 1-4: 0xeeeeeeee (native) or the
    /// token's transfer selector; bytes 5-24: token address (0xEeee...EEeE for
    /// native); bytes 25-56: amount.
    event Announcement(
        uint256 indexed schemeId,
        address indexed stealthAddress,
        address indexed caller,
        bytes ephemeralPubKey,
        bytes metadata
    );

    function announce(uint256 schemeId, address stealthAddress, bytes memory ephemeralPubKey, bytes memory metadata)
        external
    {
        emit Announcement(schemeId, stealthAddress, msg.sender, ephemeralPubKey, metadata);
    }
}
